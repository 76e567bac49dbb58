package registry

import (
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"syscall"
	"testing"

	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scanFault makes the scan of the modules directory fail with err while set.
type scanFault struct {
	landing.Volume
	mu  sync.Mutex
	err error
}

func (v *scanFault) set(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.err = err
}

func (v *scanFault) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	v.mu.Lock()
	err := v.err
	v.mu.Unlock()
	if err != nil && name == modulesDir {
		return nil, &fs.PathError{Op: "openat", Path: "modules/demo.hello/records", Err: err}
	}
	return v.Volume.ReadDir(ctx, name)
}

func TestAnIndexThatCouldNotFindOutIs503AndOneThatFailedIs500AndNeitherShowsTheError(t *testing.T) {
	for _, c := range []struct {
		name       string
		err        error
		status     int
		retryAfter bool
		level      slog.Level
	}{
		{"descriptors exhausted: could not find out", syscall.EMFILE, http.StatusServiceUnavailable, true, slog.LevelWarn},
		// The control: the same failure at the same stage, but one that
		// repeating would repeat, is not "retry later".
		{"an I/O error: a failure", syscall.EIO, http.StatusInternalServerError, false, slog.LevelError},
	} {
		t.Run(c.name, func(t *testing.T) {
			var fault *scanFault
			f := newFixture(t, fixtureOptions{volume: func(v landing.Volume) landing.Volume {
				fault = &scanFault{Volume: v}
				return fault
			}})
			f.publish("Demo.Hello", "1.0.0", "") // invalidates: the next index read derives
			key := f.instance("acme", "pro", "Plugins/*")
			fault.set(c.err)

			got := f.do(request{path: client.IndexPath, key: key})
			assert.Equal(t, c.status, got.status, "%s", got.body)
			assert.Equal(t, c.retryAfter, got.header.Get("Retry-After") != "")
			var body refusal
			require.NoError(t, json.Unmarshal(got.body, &body))
			assert.Equal(t, StageActivation, body.Stage)
			for _, internal := range []string{"openat", "modules/", c.err.Error()} {
				assert.NotContains(t, string(got.body), internal, "no internal text in the answer")
			}
			logged := f.logs.Matching(c.level, "failed in "+StageActivation)
			require.Len(t, logged, 1, "logged once, with its stage")
			assert.Contains(t, logged[0].Attrs["error"].String(), c.err.Error(), "the detail is in the log")
		})
	}
}
