package access

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func ptr(b bool) *bool { return &b }

func TestAPolicyCapTakesAwayOnlyTheFlagsSetToFalse(t *testing.T) {
	everything := All | Sync | Compile
	cases := []struct {
		name   string
		policy Policy
		want   Permission
	}{
		{"no flags", Policy{}, everything},
		{"true changes nothing", Policy{Read: ptr(true), Create: ptr(true), Api: ptr(true)}, everything},
		{"read", Policy{Read: ptr(false)}, everything &^ Read},
		{"create also stops compile and sync", Policy{Create: ptr(false)}, everything &^ (Create | Compile | Sync)},
		{"update", Policy{Update: ptr(false)}, everything &^ Update},
		{"delete", Policy{Delete: ptr(false)}, everything &^ Delete},
		{"comment", Policy{Comment: ptr(false)}, everything &^ Comment},
		{"execute", Policy{Execute: ptr(false)}, everything &^ Execute},
		{"thread", Policy{Thread: ptr(false)}, everything &^ Thread},
		{"api", Policy{Api: ptr(false)}, everything &^ Api},
		{"several", Policy{Update: ptr(false), Delete: ptr(false)}, everything &^ (Update | Delete)},
		{"public read and breaking inheritance are not caps", Policy{PublicRead: true, BreaksInheritance: true}, everything},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.policy.Cap())
		})
	}
}
