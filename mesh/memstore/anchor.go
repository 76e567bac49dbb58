package memstore

import (
	"strings"

	"github.com/meshrx/meshrx/mesh"
)

// anchorFilter is a cheap test of whether a written path can lie within a
// live query's anchor. It lets a write settle most queries anchored
// elsewhere without running the full match. It admits every path when it
// cannot decide cheaply (globs, ancestor scopes, no anchor).
type anchorFilter struct {
	decides bool
	scope   mesh.Scope
	anchors []string // lower-cased, no globs
}

func newAnchorFilter(q *mesh.Query) anchorFilter {
	anchors := q.Paths
	if len(anchors) == 0 {
		if q.Path == "" && q.Scope == mesh.ScopeExact {
			return anchorFilter{} // no anchor: the whole tree
		}
		anchors = []string{q.Path}
	}
	switch q.Scope {
	case mesh.ScopeExact, mesh.ScopeChildren, mesh.ScopeDescendants, mesh.ScopeSubtree:
	default:
		return anchorFilter{}
	}
	f := anchorFilter{decides: true, scope: q.Scope, anchors: make([]string, 0, len(anchors))}
	for _, a := range anchors {
		if strings.Contains(a, "*") {
			return anchorFilter{}
		}
		f.anchors = append(f.anchors, strings.ToLower(a))
	}
	return f
}

// admits reports whether the node at the lower-cased path (in the
// lower-cased namespace ns) may lie within the anchor.
func (f anchorFilter) admits(path, ns string) bool {
	if !f.decides {
		return true
	}
	for _, a := range f.anchors {
		below := a == "" || (len(path) > len(a) && path[len(a)] == '/' && strings.HasPrefix(path, a))
		switch {
		case f.scope == mesh.ScopeExact && path == a,
			f.scope == mesh.ScopeChildren && ns == a,
			f.scope == mesh.ScopeDescendants && below,
			f.scope == mesh.ScopeSubtree && (path == a || below):
			return true
		}
	}
	return false
}
