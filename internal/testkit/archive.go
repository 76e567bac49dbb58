package testkit

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Entry is one zip entry to write; zero fields mean a deflated regular file.
type Entry struct {
	Name   string
	Body   []byte
	Mode   fs.FileMode // 0 means a regular file, 0644
	Store  bool
	Header *zip.FileHeader // written raw with Body as the compressed data
}

// Zip returns a zip archive of entries.
func Zip(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		if e.Header != nil {
			w, err := zw.CreateRaw(e.Header)
			require.NoError(t, err)
			_, err = w.Write(e.Body)
			require.NoError(t, err)
			continue
		}
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate}
		if e.Store {
			h.Method = zip.Store
		}
		mode := e.Mode
		if mode == 0 {
			mode = 0o644
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		require.NoError(t, err)
		_, err = w.Write(e.Body)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// ModuleArchive is a module version with a manifest naming its files, so a
// reader can tell whether it sees all of them.
func ModuleArchive(t testing.TB, module, version string, nfiles int) []byte {
	t.Helper()
	var entries []Entry
	var manifest []string
	for i := range nfiles {
		name := fmt.Sprintf("lib/part%02d.txt", i)
		manifest = append(manifest, name)
		entries = append(entries, Entry{Name: name, Body: FileBody(module, version, name)})
	}
	entries = append(entries, Entry{Name: "MANIFEST", Body: []byte(strings.Join(manifest, "\n"))})
	return Zip(t, entries...)
}

// FileBody is what ModuleArchive writes into file name of a module version.
func FileBody(module, version, name string) []byte {
	return []byte(fmt.Sprintf("%s %s %s\n", module, version, name))
}

// Tree lists everything under root, with each file's contents, so that two
// moments can be compared for "nothing left behind".
func Tree(t testing.TB, root string) map[string]string {
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

// Releaser is a gate closed once, from the test or its cleanup, so that a
// parked call is always let go.
type Releaser struct {
	ch   chan struct{}
	once sync.Once
}

// NewReleaser returns a closed-at-cleanup gate.
func NewReleaser(t testing.TB) *Releaser {
	r := &Releaser{ch: make(chan struct{})}
	t.Cleanup(r.Release)
	return r
}

// Release opens the gate; later calls do nothing.
func (r *Releaser) Release() { r.once.Do(func() { close(r.ch) }) }

// Done is closed once the gate is open.
func (r *Releaser) Done() <-chan struct{} { return r.ch }

// Wait blocks until the gate opens or ctx is done.
func (r *Releaser) Wait(ctx context.Context) {
	select {
	case <-r.ch:
	case <-ctx.Done():
	}
}

// Generations lists the generation directories of module under a landing's
// volume root (modules/<module, lower case>/generations), nil when there are
// none: the layout as a test looks at it from outside.
func Generations(t testing.TB, root, module string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "modules", foldName(module), "generations"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// foldName lowers 'A'–'Z' and leaves every other byte, as the landing keys
// a module (mesh.FoldName's rule; testkit imports neither, which import it).
func foldName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
