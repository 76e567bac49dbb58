package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/rx"
)

// On the embedded store with -data, a restart is the same database: it
// prints the demo key clients already use, and serves what was published
// before it at its tier. Control run: with openMesh ignoring keepDir (a
// fresh memstore each start, as before), the second start printed another
// key and the first was refused (401).
func TestARestartOnTheEmbeddedStoreWithDataKeepsTheDemoKeyAndThePublishedTiers(t *testing.T) {
	dir := t.TempDir()
	first := start(t, hooks{}, "-data", dir)
	archive, err := demoBundle(demoPackage{name: "My.Plugin", version: "1.0.0", tier: "pro"})
	require.NoError(t, err)
	resp, body := first.do(t, http.MethodPost, client.BundlesPath+"/My.Plugin?version=1.0.0&tier=pro", "Bearer "+first.token, nil, archive)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", body)
	require.Contains(t, indexed(t, first, first.key), "My.Plugin")
	first.stop()

	again := start(t, hooks{}, "-data", dir)
	assert.Equal(t, first.key, again.key, "a restart prints the key clients already use")
	assert.Contains(t, indexed(t, again, first.key), "My.Plugin", "and serves what was published before it, at its tier")
}

// indexed returns the plugins s's index lists for key.
func indexed(t *testing.T, s *started, key string) []string {
	t.Helper()
	resp, body := s.do(t, http.MethodGet, client.IndexPath, "Bearer "+key, nil, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	var idx client.Index
	require.NoError(t, json.Unmarshal(body, &idx))
	var plugins []string
	for _, b := range idx.Bundles {
		plugins = append(plugins, b.Plugin)
	}
	return plugins
}

// The file is replayed as written: a deletion removes, a later put
// replaces; a last line cut short (a crash during its append, before the
// write was answered) is dropped with a warning, and the file is rewritten
// with the nodes alone. A damaged line anywhere else refuses the start,
// naming the file and the line, rather than starting without its node.
// Control run: a decoder that skipped bad lines started on the damaged
// file.
func TestAKeptMeshReplaysItsWritesDropsATornLastLineAndRefusesADamagedOne(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, keptMeshFile)
	lines := []string{
		`{"put":{"path":"acme/a","nodeType":"Item","content":{"v":1}}}`,
		`{"put":{"path":"acme/b","nodeType":"Item"}}`,
		`{"put":{"path":"acme/c","nodeType":"Item"}}`,
		`{"delete":"acme/c"}`,
		`{"put":{"path":"acme/a","nodeType":"Item","content":{"v":2}}}`,
	}
	torn := `{"put":{"path":"acme/d","nodeTy`
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"+torn), 0o600))

	var logs strings.Builder
	s := openKept(t, dir, slog.New(slog.NewTextHandler(&logs, nil)))
	assert.Equal(t, map[string]string{"acme/a": `{"v":2}`, "acme/b": ""}, contents(t, s, "acme/a", "acme/b", "acme/c", "acme/d"))
	assert.Contains(t, logs.String(), "cut short")
	require.NoError(t, s.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(data), "\n"), "rewritten with the two nodes alone: %s", data)
	assert.NotContains(t, string(data), "acme/d")

	for _, bad := range []string{`{"put":{"path":"acme/b"`, `{"put":{"path":"acme/b","nodeType":"Item"},"delete":"acme/a"}`, `{}`, `{"set":"acme/b"}`} {
		damaged := strings.Join([]string{lines[0], bad, lines[1]}, "\n") + "\n"
		require.NoError(t, os.WriteFile(path, []byte(damaged), 0o600))
		_, err := openKeptStore(t.Context(), dir, memstore.Options{}, slog.New(slog.DiscardHandler))
		require.Error(t, err, "%s", bad)
		assert.Contains(t, err.Error(), path+" line 2 is damaged", bad)
	}
}

// A write whose append fails is answered as "may have been applied", and
// the store refuses every write after it, so nothing is acknowledged that
// a restart would not have. The failure is injected by swapping the file
// for one opened read-only. Control run: without the refusal (k.broken
// unchecked) the later put and delete were applied (acme/c held, acme/a
// gone) though no file holds them.
func TestAWriteTheFileCannotKeepIsNotAcknowledgedAndStopsLaterWrites(t *testing.T) {
	dir := t.TempDir()
	s := openKept(t, dir, slog.New(slog.DiscardHandler))
	defer s.Close()
	_, err := s.Put(t.Context(), mesh.Node{Path: "acme/a", NodeType: "Item"})
	require.NoError(t, err)

	readOnly, err := os.Open(filepath.Join(dir, keptMeshFile))
	require.NoError(t, err)
	s.turn <- struct{}{}
	appendOnly := s.f
	s.f = readOnly
	<-s.turn
	defer appendOnly.Close()

	_, err = s.Put(t.Context(), mesh.Node{Path: "acme/b", NodeType: "Item"})
	assert.ErrorIs(t, err, mesh.ErrOutcomeUnknown)
	assert.True(t, mesh.IsUnavailable(err))
	_, err = s.Put(t.Context(), mesh.Node{Path: "acme/c", NodeType: "Item"})
	assert.True(t, mesh.IsUnavailable(err), "refused after a failed append: %v", err)
	assert.Error(t, s.Delete(t.Context(), "acme/a"))
	assert.Equal(t, map[string]string{"acme/a": "", "acme/b": ""}, contents(t, s, "acme/a", "acme/b", "acme/c"),
		"b (outcome unknown) is held; the refused put and delete changed nothing")
}

// A write waits for its turn within its context, naming what it waits for.
func TestAKeptWriteWaitingForItsTurnReturnsWhenItsContextEnds(t *testing.T) {
	s := openKept(t, t.TempDir(), slog.New(slog.DiscardHandler))
	defer s.Close()
	s.turn <- struct{}{} // a write on its turn
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Put(ctx, mesh.Node{Path: "acme/a", NodeType: "Item"})
	<-s.turn
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "waiting for the write before it")
	assert.Empty(t, contents(t, s, "acme/a"), "nothing written")
}

func openKept(t *testing.T, dir string, logger *slog.Logger) *keptStore {
	t.Helper()
	s, err := openKeptStore(t.Context(), dir, memstore.Options{}, logger)
	require.NoError(t, err)
	return s
}

// contents returns the content of each of paths that s holds.
func contents(t *testing.T, s mesh.Store, paths ...string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, p := range paths {
		nodes, err := rx.Collect(t.Context(), s.Get(p))
		require.NoError(t, err)
		for _, n := range nodes {
			got[n.Path] = string(n.Content)
		}
	}
	return got
}

// Writers on several goroutines to the same paths: what a restart replays
// is what the store held, node for node, because a write and its line take
// one turn. Control run: with the line appended on a turn taken again
// after the store's write (-count=3), a replayed store differed from the
// live one.
func TestWhatARestartReplaysIsWhatTheStoreHeldWhateverTheWritersOrder(t *testing.T) {
	dir := t.TempDir()
	s := openKept(t, dir, slog.New(slog.DiscardHandler))
	const writers, writes, paths = 8, 200, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes {
				p := fmt.Sprintf("acme/n%d", (w+i)%paths)
				if i%7 == 3 {
					assert.NoError(t, s.Delete(t.Context(), p))
					continue
				}
				_, err := s.Put(t.Context(), mesh.Node{Path: p, NodeType: "Item", Content: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	var all []string
	for i := range paths {
		all = append(all, fmt.Sprintf("acme/n%d", i))
	}
	live := contents(t, s, all...)
	require.NoError(t, s.Close())

	again := openKept(t, dir, slog.New(slog.DiscardHandler))
	defer again.Close()
	assert.Equal(t, live, contents(t, again, all...))
}
