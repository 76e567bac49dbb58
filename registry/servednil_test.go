package registry

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAServedActivationWithoutALandingIsRefusedWhereItIsMadeNotInItsOwnGoroutine:
// NewServedActivation starts the journal tailer at once, so a nil landing
// reached it there: a nil dereference on a goroutine of the service's own,
// which ends the process and names nothing. It is refused where it is
// wired, on the caller's goroutine, naming the argument, as auth.Middleware
// refuses an Authenticator without its store.
//
// Negative control, run: without the check the test binary died of SIGSEGV
// in landing.(*ModuleLanding).enter, called from ServedActivation.tailer.
func TestAServedActivationWithoutALandingIsRefusedWhereItIsMadeNotInItsOwnGoroutine(t *testing.T) {
	assert.PanicsWithValue(t,
		"registry: NewServedActivation: the *landing.ModuleLanding is nil (landing.NewModuleLanding makes one)",
		func() { NewServedActivation(nil, ServedOptions{}) })
}
