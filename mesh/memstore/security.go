package memstore

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/meshrx/meshrx/mesh"
)

// security is the materialisation of the access fold's input: every node of
// a security type, from every partition, maintained inside the write that
// changes it. It is read whole, never by a query, so it can be neither paged
// nor narrowed.
//
// Its version is a counter and a token (mesh.SecurityVersion): every change
// draws a fresh token, so this store's versions never equal another's (a
// reader switched to another store, say a fresh one with as many writes,
// sees the change). The tokens come from a ChaCha8 generator of the
// store's own, seeded from crypto/rand: a change costs no system call.
type security struct {
	gated   []string
	nodes   map[string]mesh.Node // exact path → node: paths that differ only in case are two nodes, as in the index and in PostgreSQL
	version mesh.SecurityVersion
	tokens  *rand.ChaCha8
	sorted  []mesh.Node          // the nodes of version, built on first read; shared, never modified
	built   mesh.SecurityVersion // the version sorted was built for; zero for none
}

func newSecurity(gated []string) security {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails (crypto/rand panics rather than return an error)
	s := security{gated: slices.Clone(gated), nodes: map[string]mesh.Node{}, tokens: rand.NewChaCha8(seed)}
	s.bump()
	return s
}

// bump moves the version: the next counter, a fresh token.
func (s *security) bump() {
	s.version.Seq++
	_, _ = s.tokens.Read(s.version.Token[:]) // ChaCha8.Read never fails
}

// apply records a write; old or n is nil for an insert or a delete. Called
// with the store's lock held.
func (s *security) apply(old, n *mesh.Node) {
	changed := false
	if old != nil && s.gates(old.NodeType) {
		delete(s.nodes, old.Path)
		changed = true
	}
	if n != nil && s.gates(n.NodeType) {
		s.nodes[n.Path] = *n
		changed = true
	}
	if changed {
		s.bump()
	}
}

// gates reports whether nodes of nodeType are in the materialisation
// (compared without case).
func (s *security) gates(nodeType string) bool {
	return slices.ContainsFunc(s.gated, func(t string) bool { return mesh.EqualNames(t, nodeType) })
}

// SecurityNodes returns every node of a security type (mesh.SecurityTypes
// and Options.GatedTypes, which the snapshot declares as its GatedTypes)
// and the version of that set: the complete input
// of the access fold, kept by the write path. The slice is shared by every
// reader of the same version and must not be modified; reading an unchanged
// set costs no copy.
func (s *Store) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	if err := s.usable("SecurityNodes", ctx, true); err != nil {
		return mesh.SecuritySnapshot{}, err
	}
	if err := ctx.Err(); err != nil {
		return mesh.SecuritySnapshot{}, fmt.Errorf("memstore: security nodes: %w", err)
	}
	if err := s.mu.RLockContext(ctx); err != nil {
		return mesh.SecuritySnapshot{}, fmt.Errorf("memstore: security nodes: waiting for the store's lock: %w", err)
	}
	closed, version, built, sorted := s.closed, s.sec.version, s.sec.built, s.sec.sorted
	s.mu.RUnlock()
	if closed {
		return mesh.SecuritySnapshot{}, unavailable("read the security nodes")
	}
	if built == version {
		return mesh.SecuritySnapshot{Version: version, Nodes: sorted, GatedTypes: s.sec.gated}, nil
	}
	if err := s.mu.LockContext(ctx); err != nil {
		return mesh.SecuritySnapshot{}, fmt.Errorf("memstore: security nodes: waiting for the store's lock: %w", err)
	}
	defer s.mu.Unlock()
	if s.closed {
		return mesh.SecuritySnapshot{}, unavailable("read the security nodes")
	}
	if s.sec.built != s.sec.version {
		nodes := make([]mesh.Node, 0, len(s.sec.nodes))
		for _, n := range s.sec.nodes {
			nodes = append(nodes, n)
		}
		slices.SortFunc(nodes, func(a, b mesh.Node) int { return strings.Compare(a.Path, b.Path) })
		s.sec.sorted, s.sec.built = nodes, s.sec.version
	}
	return mesh.SecuritySnapshot{Version: s.sec.version, Nodes: s.sec.sorted, GatedTypes: s.sec.gated}, nil
}

// SecurityVersion returns the version SecurityNodes would return now,
// without building the set.
func (s *Store) SecurityVersion(ctx context.Context) (mesh.SecurityVersion, error) {
	if err := s.usable("SecurityVersion", ctx, true); err != nil {
		return mesh.SecurityVersion{}, err
	}
	if err := ctx.Err(); err != nil {
		return mesh.SecurityVersion{}, fmt.Errorf("memstore: security version: %w", err)
	}
	if err := s.mu.RLockContext(ctx); err != nil {
		return mesh.SecurityVersion{}, fmt.Errorf("memstore: security version: waiting for the store's lock: %w", err)
	}
	closed, version := s.closed, s.sec.version
	s.mu.RUnlock()
	if closed {
		return mesh.SecurityVersion{}, unavailable("read the security version")
	}
	return version, nil
}

var (
	_ mesh.SecurityReader    = (*Store)(nil)
	_ mesh.SecurityVersioner = (*Store)(nil)
)
