package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
)

// keptMeshFile is the file in the data directory that keeps the embedded
// store's nodes across restarts.
const keptMeshFile = "mesh.jsonl"

// keptEntry is one line of the kept mesh: a node as the store holds it
// after a write, or the path of a deletion.
type keptEntry struct {
	Put    *mesh.Node `json:"put,omitempty"`
	Delete string     `json:"delete,omitempty"`
}

// keptStore is the embedded store of a registry started with -data and no
// -pg. Each write the store applies is appended to the data directory's
// mesh.jsonl, and synced, before it is answered; the next start replays the
// file. So a restart keeps what the mesh held — the packages' tiers, the
// demo instance and its key — as a database would, instead of issuing a new
// demo key and serving earlier publications to nobody.
//
// Writes take turns, so the file's order is the store's; each waits for its
// turn within its context. If an append fails, that write's error wraps
// mesh.ErrOutcomeUnknown (the store holds it, the file may not) and every
// later write is refused: what is answered is never more than what is kept.
type keptStore struct {
	*memstore.Store
	path   string
	turn   chan struct{} // holds a token while a write runs
	f      *os.File      // guarded by turn
	broken error         // the failed append; guarded by turn
}

// openKeptStore replays dir's mesh.jsonl into a new memstore, rewrites the
// file with the nodes alone (so it grows with one run's writes, not with
// every run's), and keeps it open for the writes to come. A damaged line is
// an error naming the file and line: starting without it would lose nodes
// silently. A last line cut short (a crash during its append, before the
// write was answered) is dropped with a warning.
func openKeptStore(ctx context.Context, dir string, opts memstore.Options, logger *slog.Logger) (*keptStore, error) {
	path := filepath.Join(dir, keptMeshFile)
	nodes, err := readKeptMesh(path, logger)
	if err != nil {
		return nil, err
	}
	s, err := memstore.New(opts)
	if err != nil {
		return nil, err
	}
	var kept bytes.Buffer
	for _, n := range nodes {
		stored, err := s.Put(ctx, n)
		if err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("-data: replaying %s: %w", path, err)
		}
		line, err := json.Marshal(keptEntry{Put: &stored})
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		kept.Write(append(line, '\n'))
	}
	f, err := rewriteKeptMesh(path, kept.Bytes())
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("-data: keeping the mesh in %s: %w", path, err)
	}
	return &keptStore{Store: s, path: path, turn: make(chan struct{}, 1), f: f}, nil
}

// readKeptMesh returns the nodes path holds after replaying its lines, in
// path order; none when the file does not exist.
func readKeptMesh(path string, logger *slog.Logger) ([]mesh.Node, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("-data: reading the kept mesh: %w", err)
	}
	byPath := map[string]mesh.Node{}
	for n := 1; len(data) > 0; n++ {
		line, rest, complete := bytes.Cut(data, []byte{'\n'})
		data = rest
		if !complete {
			logger.Warn("registry: the kept mesh's last line was cut short; a crash interrupted a write before it was answered, and it is dropped",
				slog.String("file", path), slog.Int("line", n))
			break
		}
		var e keptEntry
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("-data: %s line %d is damaged (%v): repair or remove it; starting without it would drop nodes", path, n, err)
		}
		switch {
		case e.Put != nil && e.Delete == "" && e.Put.Path != "":
			byPath[e.Put.Path] = *e.Put
		case e.Put == nil && e.Delete != "":
			delete(byPath, e.Delete)
		default:
			return nil, fmt.Errorf("-data: %s line %d is damaged (want a put with a path, or a delete): repair or remove it; starting without it would drop nodes", path, n)
		}
	}
	nodes := make([]mesh.Node, 0, len(byPath))
	for _, n := range byPath {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Path < nodes[j].Path })
	return nodes, nil
}

// rewriteKeptMesh replaces path with data whole (a crash leaves the old file
// or the new one) and opens it for appending.
func rewriteKeptMesh(path string, data []byte) (*os.File, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), keptMeshFile+".*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing to remove
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o600) // instances and their key hashes
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err = errors.Join(err, tmp.Close()); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Put is the store's Put, kept.
func (k *keptStore) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	return k.write(ctx, "put "+n.Path, func() (keptEntry, mesh.Node, error) {
		stored, err := k.Store.Put(ctx, n)
		return keptEntry{Put: &stored}, stored, err
	})
}

// PutIfVersion is the store's PutIfVersion, kept.
func (k *keptStore) PutIfVersion(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	return k.write(ctx, "put "+n.Path, func() (keptEntry, mesh.Node, error) {
		stored, err := k.Store.PutIfVersion(ctx, n, expected)
		return keptEntry{Put: &stored}, stored, err
	})
}

// Delete is the store's Delete, kept.
func (k *keptStore) Delete(ctx context.Context, path string) error {
	_, err := k.write(ctx, "delete "+path, func() (keptEntry, mesh.Node, error) {
		return keptEntry{Delete: path}, mesh.Node{}, k.Store.Delete(ctx, path)
	})
	return err
}

// write runs apply on its turn and appends what it wrote to the file.
func (k *keptStore) write(ctx context.Context, op string, apply func() (keptEntry, mesh.Node, error)) (mesh.Node, error) {
	select {
	case k.turn <- struct{}{}:
	case <-ctx.Done():
		return mesh.Node{}, fmt.Errorf("kept mesh: %s: waiting for the write before it: %w", op, ctx.Err())
	}
	defer func() { <-k.turn }()
	if k.broken != nil {
		return mesh.Node{}, &mesh.UnavailableError{Op: op, Err: fmt.Errorf("%s cannot be written since an earlier write failed: %w", k.path, k.broken)}
	}
	e, stored, err := apply()
	if err != nil {
		return mesh.Node{}, err // nothing written
	}
	line, err := json.Marshal(e)
	if err == nil {
		_, err = k.f.Write(append(line, '\n'))
	}
	if err == nil {
		err = k.f.Sync()
	}
	if err != nil {
		k.broken = err
		return mesh.Node{}, &mesh.UnavailableError{Op: op, Err: fmt.Errorf("%w: keeping it in %s: %w", mesh.ErrOutcomeUnknown, k.path, err)}
	}
	return stored, nil
}

// Close closes the store, then the file once the write on its turn (if
// any) has been kept: the store refuses writes from then on, and a write
// holds its turn for one append and sync.
func (k *keptStore) Close() error {
	err := k.Store.Close()
	k.turn <- struct{}{}
	defer func() { <-k.turn }()
	if k.f == nil {
		return err
	}
	err = errors.Join(err, k.f.Close())
	k.f = nil
	return err
}
