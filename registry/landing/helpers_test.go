package landing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"testing"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/stretchr/testify/require"
)

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newLanding returns a ModuleLanding on v that is closed when the test ends.
func newLanding(t *testing.T, v Volume, opts Options) *ModuleLanding {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	l, err := NewModuleLanding(v, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// checkComplete returns an error unless every served module in act has all
// its files and its bundle in place, as recorded.
func checkComplete(ctx context.Context, v Volume, act Activation) error {
	for _, r := range act.Modules {
		manifest, err := v.ReadFile(ctx, path.Join(r.FilesDir(), "MANIFEST"), 1<<20)
		if err != nil {
			return fmt.Errorf("%s@%s: manifest: %w", r.Module, r.Version, err)
		}
		for name := range strings.SplitSeq(string(manifest), "\n") {
			got, err := v.ReadFile(ctx, path.Join(r.FilesDir(), name), 1<<20)
			if err != nil {
				return fmt.Errorf("%s@%s: %w", r.Module, r.Version, err)
			}
			if want := testkit.FileBody(r.Module, r.Version, name); !bytes.Equal(got, want) {
				return fmt.Errorf("%s@%s: %s holds %q, want %q", r.Module, r.Version, name, got, want)
			}
		}
		bundle, err := v.ReadFile(ctx, bundlePath(moduleKey(r.Module), r.Generation), 1<<30)
		if err != nil {
			return fmt.Errorf("%s@%s: bundle: %w", r.Module, r.Version, err)
		}
		if sum := sha256.Sum256(bundle); hex.EncodeToString(sum[:]) != r.SHA256 {
			return fmt.Errorf("%s@%s: bundle does not match its record", r.Module, r.Version)
		}
	}
	return nil
}

// servedVersions maps each served module to its version.
func servedVersions(act Activation) map[string]string {
	out := map[string]string{}
	for _, r := range act.Modules {
		out[r.Module] = r.Version
	}
	return out
}
