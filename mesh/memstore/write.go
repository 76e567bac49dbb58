package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/meshrx/meshrx/mesh"
)

// Put stores n, normalised (mesh.Node.Normalize), and returns what was
// stored. The store owns Version and LastModified: a new node gets version
// 1, and a write that changes what a reader sees (content, compared as JSON
// values; name; node type; state; main node) gets the next version and the
// clock's time. A write that changes none of them stores nothing, announces
// nothing and returns the node as it was.
//
// Put never runs or waits for a subscriber's code: live queries and Changes
// receive the write from their own queues.
//
// Put fails with the *mesh.NodeError of an invalid node, an
// *mesh.UnroutablePathError for a path no partition can hold, a
// *mesh.PathError for a partition name no store can hold
// (mesh.PartitionNameProblem) or one naming a global satellite's schema
// (System_Access), ctx's error when ctx
// ends before the write (nothing is written), or ErrClosed.
func (s *Store) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	if err := s.usable("Put", ctx, true); err != nil {
		return mesh.Node{}, err
	}
	return s.put(ctx, n, unconditional)
}

// PutIfVersion is Put only if the node at n's path is at version expected
// (0: absent) when the write takes the store's lock; otherwise it writes
// nothing and fails with *mesh.VersionConflictError. A negative expected
// version is a *mesh.NodeError.
func (s *Store) PutIfVersion(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	if err := s.usable("PutIfVersion", ctx, true); err != nil {
		return mesh.Node{}, err
	}
	if expected < 0 {
		return mesh.Node{}, &mesh.NodeError{Path: n.Path, Field: "version",
			Reason: fmt.Sprintf("expected version %d is negative", expected)}
	}
	return s.put(ctx, n, expected)
}

// unconditional is the expected version of a plain Put.
const unconditional = -1

func (s *Store) put(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	if err := ctx.Err(); err != nil {
		return mesh.Node{}, fmt.Errorf("memstore: put %q: %w", n.Path, err)
	}
	n, err := n.NormalizeWrite()
	if err != nil {
		return mesh.Node{}, err
	}
	schema, global, err := s.schemaOf(n.Path)
	if err != nil {
		return mesh.Node{}, err
	}
	n.Content = slices.Clone(n.Content) // the caller keeps its bytes

	if err := s.mu.LockContext(ctx); err != nil {
		return mesh.Node{}, fmt.Errorf("memstore: put %q: waiting for the store's lock: %w", n.Path, err)
	}
	if s.closed {
		s.mu.Unlock()
		return mesh.Node{}, fmt.Errorf("memstore: put %q: %w", n.Path, ErrClosed)
	}
	if err := ctx.Err(); err != nil { // ended as the lock was taken
		s.mu.Unlock()
		return mesh.Node{}, fmt.Errorf("memstore: put %q: %w", n.Path, err)
	}
	p := s.parts[schema]
	if p == nil {
		p = newPartition(schema, global)
		s.addPartition(p)
	}
	var old *mesh.Node
	e, ok := p.lookup(n.Path)
	if expected != unconditional {
		var actual int64
		if ok {
			actual = e.node.Version
		}
		if actual != expected {
			s.mu.Unlock()
			return mesh.Node{}, &mesh.VersionConflictError{Path: n.Path, Expected: expected, Actual: actual}
		}
	}
	if ok {
		if sameVisible(e.node, n) {
			stored := e.node
			s.mu.Unlock()
			return stored, nil
		}
		prev := e.node
		old = &prev
		n.Version = prev.Version + 1
	} else {
		n.Version = 1
	}
	n.LastModified = s.clk.Now().UTC().Round(0)
	p.put(n)
	s.sec.apply(old, &n)
	touched := s.classify(schema, global, old, &n)
	notice := mesh.ChangeNotice{Path: n.Path, Op: mesh.WriteInsert, NodeType: n.NodeType}
	if old != nil {
		notice.Op = mesh.WriteUpdate
		if old.NodeType != n.NodeType {
			notice.NodeType = "" // both types may matter: everyone re-reads
		}
	}
	watchers := s.announce(notice)
	s.mu.Unlock()

	s.start(touched, watchers)
	return n, nil
}

// Delete removes the node at exactly path. Deleting an absent node, or one
// under an unroutable path, is not an error. It fails with *mesh.PathError
// for an invalid path, ctx's error when ctx ends first (nothing is deleted),
// or ErrClosed.
func (s *Store) Delete(ctx context.Context, path string) error {
	if err := s.usable("Delete", ctx, true); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: delete %q: %w", path, err)
	}
	if err := mesh.ValidatePath(path); err != nil {
		return err
	}
	schema, global, err := s.schemaOf(path)
	if err != nil {
		return nil // nothing can be stored there
	}
	if err := s.mu.LockContext(ctx); err != nil {
		return fmt.Errorf("memstore: delete %q: waiting for the store's lock: %w", path, err)
	}
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("memstore: delete %q: %w", path, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("memstore: delete %q: %w", path, err)
	}
	p := s.parts[schema]
	if p == nil {
		s.mu.Unlock()
		return nil
	}
	old, ok := p.remove(path)
	if !ok {
		s.mu.Unlock()
		return nil
	}
	s.sec.apply(&old, nil)
	touched := s.classify(schema, global, &old, nil)
	watchers := s.announce(mesh.ChangeNotice{Path: path, Op: mesh.WriteDelete, NodeType: old.NodeType})
	s.mu.Unlock()

	s.start(touched, watchers)
	return nil
}

// sameVisible reports whether b changes nothing a reader of a sees.
func sameVisible(a, b mesh.Node) bool {
	return a.Name == b.Name && a.NodeType == b.NodeType && a.State == b.State &&
		a.MainNode == b.MainNode && sameContent(a.Content, b.Content)
}
