package sockbatch_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/meshrx/meshrx/internal/sockbatch"
)

// TestNewRefusesEntriesOutOfRangeWithAnOptionsErrorNamingTheSettingAndRange:
// the refusal is a *sockbatch.OptionsError (errors.As), never
// ErrUnsupported, so a caller can tell a wrong argument from a system
// without io_uring. Negative control, run by hand: with New's old
// fmt.Errorf("sockbatch: %d entries: want 1 to %d") errors.As found no
// *OptionsError for each of the three counts.
func TestNewRefusesEntriesOutOfRangeWithAnOptionsErrorNamingTheSettingAndRange(t *testing.T) {
	for _, n := range []int{-1, 0, sockbatch.MaxEntries + 1} {
		r, err := sockbatch.New(n, sockbatch.Options{})
		var oe *sockbatch.OptionsError
		switch {
		case r != nil || !errors.As(err, &oe):
			t.Errorf("New(%d) = %v, %v; want an *OptionsError", n, r, err)
		case errors.Is(err, errors.ErrUnsupported):
			t.Errorf("New(%d): %v is ErrUnsupported; a bad argument is not", n, err)
		case oe.Setting != "entries":
			t.Errorf("New(%d): Setting %q; want \"entries\"", n, oe.Setting)
		case !strings.Contains(err.Error(), fmt.Sprint(n)) || !strings.Contains(err.Error(), fmt.Sprintf("1 to %d", sockbatch.MaxEntries)):
			t.Errorf("New(%d): %q does not name the value and the range", n, err)
		}
	}
}
