package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/meshrx/meshrx/mesh"
)

// security is the materialisation of the access fold's input: every node of
// a security type, from every partition, maintained inside the write that
// changes it. It is read whole, never by a query, so it can be neither paged
// nor narrowed.
type security struct {
	gated   []string
	nodes   map[string]mesh.Node // path → node
	version int64
}

func newSecurity(gated []string) security {
	return security{gated: slices.Clone(gated), nodes: map[string]mesh.Node{}}
}

// apply records a write; old or n is nil for an insert or a delete. Called
// with the store's lock held.
func (s *security) apply(old, n *mesh.Node) {
	changed := false
	if old != nil && mesh.IsSecurityType(old.NodeType, s.gated) {
		delete(s.nodes, strings.ToLower(old.Path))
		changed = true
	}
	if n != nil && mesh.IsSecurityType(n.NodeType, s.gated) {
		s.nodes[strings.ToLower(n.Path)] = *n
		changed = true
	}
	if changed {
		s.version++
	}
}

// SecurityNodes returns every node of a security type (mesh.SecurityTypes,
// plus Options.GatedTypes) and the version of that set: the complete input
// of the access fold, kept by the write path.
func (s *Store) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	if err := ctx.Err(); err != nil {
		return mesh.SecuritySnapshot{}, fmt.Errorf("memstore: security nodes: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return mesh.SecuritySnapshot{}, unavailable("read the security nodes")
	}
	nodes := make([]mesh.Node, 0, len(s.sec.nodes))
	for _, n := range s.sec.nodes {
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b mesh.Node) int { return strings.Compare(a.Path, b.Path) })
	return mesh.SecuritySnapshot{Version: s.sec.version, Nodes: nodes}, nil
}

var _ mesh.SecurityReader = (*Store)(nil)
