package landing

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newLanding returns a ModuleLanding on v that is closed when the test ends.
func newLanding(t *testing.T, v Volume, opts LandingOptions) *ModuleLanding {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	l, err := NewModuleLanding(v, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// releaser is a channel closed once, from the test or its cleanup, so that
// a parked call is always let go.
type releaser struct {
	ch   chan struct{}
	once sync.Once
}

func newReleaser(t *testing.T) *releaser {
	r := &releaser{ch: make(chan struct{})}
	t.Cleanup(r.release)
	return r
}

func (r *releaser) release() { r.once.Do(func() { close(r.ch) }) }

// wait blocks until released or ctx is done.
func (r *releaser) wait(ctx context.Context) {
	select {
	case <-r.ch:
	case <-ctx.Done():
	}
}

// entry is one zip entry to write; zero fields mean a deflated regular file.
type entry struct {
	name   string
	body   []byte
	mode   fs.FileMode // 0 means a regular file, 0644
	store  bool
	header *zip.FileHeader // written raw with body as the compressed data
}

func zipOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		if e.header != nil {
			w, err := zw.CreateRaw(e.header)
			require.NoError(t, err)
			_, err = w.Write(e.body)
			require.NoError(t, err)
			continue
		}
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.store {
			h.Method = zip.Store
		}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		require.NoError(t, err)
		_, err = w.Write(e.body)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// moduleArchive is a module version with a manifest naming its files, so a
// reader can tell whether it sees all of them.
func moduleArchive(t *testing.T, module, version string, nfiles int) []byte {
	t.Helper()
	var entries []entry
	var manifest []string
	for i := range nfiles {
		name := fmt.Sprintf("lib/part%02d.txt", i)
		manifest = append(manifest, name)
		entries = append(entries, entry{name: name, body: fileBody(module, version, name)})
	}
	entries = append(entries, entry{name: "MANIFEST", body: []byte(strings.Join(manifest, "\n"))})
	return zipOf(t, entries...)
}

func fileBody(module, version, name string) []byte {
	return []byte(fmt.Sprintf("%s %s %s\n", module, version, name))
}

// checkComplete returns an error unless every served module in act has all
// its files and its bundle in place, as recorded.
func checkComplete(ctx context.Context, v Volume, act Activation) error {
	for _, r := range act.Modules {
		manifest, err := v.ReadFile(ctx, path.Join(r.FilesDir(), "MANIFEST"))
		if err != nil {
			return fmt.Errorf("%s@%s: manifest: %w", r.Module, r.Version, err)
		}
		for name := range strings.SplitSeq(string(manifest), "\n") {
			got, err := v.ReadFile(ctx, path.Join(r.FilesDir(), name))
			if err != nil {
				return fmt.Errorf("%s@%s: %w", r.Module, r.Version, err)
			}
			if want := fileBody(r.Module, r.Version, name); !bytes.Equal(got, want) {
				return fmt.Errorf("%s@%s: %s holds %q, want %q", r.Module, r.Version, name, got, want)
			}
		}
		bundle, err := v.ReadFile(ctx, bundlePath(moduleKey(r.Module), r.Generation))
		if err != nil {
			return fmt.Errorf("%s@%s: bundle: %w", r.Module, r.Version, err)
		}
		if sum := sha256.Sum256(bundle); hex.EncodeToString(sum[:]) != r.SHA256 {
			return fmt.Errorf("%s@%s: bundle does not match its record", r.Module, r.Version)
		}
	}
	return nil
}

// tree lists everything under root, with each file's contents, so that two
// moments can be compared for "nothing left behind".
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			out[rel] = "<dir>"
		case d.Type()&fs.ModeSymlink != 0:
			out[rel] = "<symlink>"
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(data)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// servedVersions maps each served module to its version.
func servedVersions(act Activation) map[string]string {
	out := map[string]string{}
	for _, r := range act.Modules {
		out[r.Module] = r.Version
	}
	return out
}

// gatedVolume holds the first ReadDir of the modules directory after it is
// armed until the gate opens or the caller's context ends.
type gatedVolume struct {
	Volume
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	gate    *releaser
}

func (g *gatedVolume) arm(gate *releaser) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.gate, g.entered = true, gate, make(chan struct{}, 1)
	return g.entered
}

func (g *gatedVolume) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	g.mu.Lock()
	hold := g.armed && name == modulesDir
	gate, entered := g.gate, g.entered
	if hold {
		g.armed = false
	}
	g.mu.Unlock()
	if hold {
		entered <- struct{}{}
		gate.wait(ctx)
		if err := ctx.Err(); err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
		}
	}
	return g.Volume.ReadDir(ctx, name)
}
