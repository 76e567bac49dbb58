package registry

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"path"
	"testing"

	"github.com/meshrx/meshrx/registry/landing"
	"github.com/stretchr/testify/require"
)

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newLanding returns a ModuleLanding on v that is closed when the test ends.
func newLanding(t *testing.T, v landing.Volume, opts landing.Options) *landing.ModuleLanding {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	l, err := landing.NewModuleLanding(v, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// servedVersions maps each served module to its version.
func servedVersions(act landing.Activation) map[string]string {
	out := map[string]string{}
	for _, r := range act.Modules {
		out[r.Module] = r.Version
	}
	return out
}

// The landing's layout on the volume, as the tests look at it from outside.
const (
	modulesDir = "modules"
	ratioFloor = 1 << 20 // below it an entry's compression ratio is not judged
)

func generationsDir(key string) string { return path.Join(modulesDir, key, "generations") }

func bundlePath(key, gen string) string { return path.Join(generationsDir(key), gen, "bundle.zip") }

// reply is what the test's HTTP client got.
type reply struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// refusal is the JSON body of an answer the Deadline writes itself.
type refusal struct {
	Error     string   `json:"error"`
	Stage     string   `json:"stage"`
	WaitingOn []string `json:"waitingOn"`
}

// refusal decodes a refusal, failing the test if it is not one.
func (r reply) refusal(t *testing.T) refusal {
	t.Helper()
	var body refusal
	require.NoError(t, json.Unmarshal(r.body, &body), "body %q", r.body)
	require.NotNil(t, body.WaitingOn, "waitingOn must be a list, never null: %s", r.body)
	return body
}
