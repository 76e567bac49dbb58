package registry

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth"
)

func TestNewServerRefusesAnAuthenticatorThatCannotCheckAKey(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	for name, a := range map[string]Authenticator{
		"a zero Authenticator": &auth.Authenticator{},
		"a nil *Authenticator": (*auth.Authenticator)(nil),
	} {
		_, err := NewServer(ServerOptions{Served: f.served, Auth: a, Mesh: f.mesh, Metrics: prometheus.NewRegistry(), Clock: f.clk})
		var cfg *ConfigError
		if assert.ErrorAs(t, err, &cfg, name) {
			assert.Equal(t, "ServerOptions.Auth", cfg.Setting, name)
		}
	}
	// Control: the fixture's Authenticator, which has its Mesh, serves.
	_, got := f.index(f.instance("acme", "pro", "Plugins/*"))
	require.Equal(t, http.StatusOK, got.status)
	// Negative control (run): before the check NewServer took both, and
	// every request with a key then panicked in the Authenticator (net/http
	// recovered it and dropped the connection: no answer at all).
}
