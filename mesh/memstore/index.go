package memstore

import (
	"strings"
	"unicode/utf8"

	"github.com/meshrx/meshrx/mesh"
)

// partition holds the nodes of one partition schema in a tree of namespaces.
// Keys are lower-cased, as query matching is case-insensitive; a node's own
// path keeps its case, and two paths that differ only in case are two nodes.
type partition struct {
	schema string
	global bool                  // a global satellite schema, such as system_access: not a partition a fan-out reads
	byNS   map[string]*namespace // lower-cased namespace path → namespace; "" is the root
	size   int
}

// namespace is one node of the namespace tree: the nodes directly in it and
// the namespaces directly below it.
type namespace struct {
	parent *namespace
	seg    string            // lower-cased last segment: the key in parent.subs
	path   string            // lower-cased namespace path
	nodes  map[string]*entry // lower-cased id → entry
	subs   map[string]*namespace
}

// entry holds one node; next chains nodes whose paths differ only in case.
type entry struct {
	node mesh.Node
	next *entry
}

func newPartition(schema string, global bool) *partition {
	root := &namespace{}
	return &partition{schema: schema, global: global, byNS: map[string]*namespace{"": root}}
}

// lookup returns the node stored at exactly path.
//
// Every point read comes here (an authentication reads two nodes per
// request): the lower-case keys are built in a buffer on the stack, and a
// map indexed with string(bytes) does not allocate.
func (p *partition) lookup(path string) (*entry, bool) {
	ns, id := mesh.SplitPath(path)
	var buf [128]byte
	n := p.byNS[string(appendLower(buf[:0], ns))]
	if n == nil {
		return nil, false
	}
	for e := n.nodes[string(appendLower(buf[:0], id))]; e != nil; e = e.next {
		if e.node.Path == path {
			return e, true
		}
	}
	return nil, false
}

// put stores node, replacing the node at the same path.
func (p *partition) put(node mesh.Node) {
	n := p.ensure(strings.ToLower(node.Namespace))
	key := strings.ToLower(node.ID)
	for e := n.nodes[key]; e != nil; e = e.next {
		if e.node.Path == node.Path {
			e.node = node
			return
		}
	}
	if n.nodes == nil {
		n.nodes = map[string]*entry{}
	}
	n.nodes[key] = &entry{node: node, next: n.nodes[key]}
	p.size++
}

// remove deletes the node at exactly path and prunes namespaces left empty.
func (p *partition) remove(path string) (mesh.Node, bool) {
	ns, id := mesh.SplitPath(path)
	n := p.byNS[strings.ToLower(ns)]
	if n == nil {
		return mesh.Node{}, false
	}
	key := strings.ToLower(id)
	var prev *entry
	for e := n.nodes[key]; e != nil; prev, e = e, e.next {
		if e.node.Path != path {
			continue
		}
		switch {
		case prev != nil:
			prev.next = e.next
		case e.next != nil:
			n.nodes[key] = e.next
		default:
			delete(n.nodes, key)
		}
		p.size--
		p.prune(n)
		return e.node, true
	}
	return mesh.Node{}, false
}

// ensure returns the namespace at the lower-cased path ns, creating it and
// its ancestors.
func (p *partition) ensure(ns string) *namespace {
	if n := p.byNS[ns]; n != nil {
		return n
	}
	parentPath, seg := mesh.SplitPath(ns)
	parent := p.ensure(parentPath)
	n := &namespace{parent: parent, seg: seg, path: ns}
	if parent.subs == nil {
		parent.subs = map[string]*namespace{}
	}
	parent.subs[seg] = n
	p.byNS[ns] = n
	return n
}

// prune removes n and its ancestors while they hold nothing; the root stays.
func (p *partition) prune(n *namespace) {
	for n.parent != nil && len(n.nodes) == 0 && len(n.subs) == 0 {
		delete(n.parent.subs, n.seg)
		delete(p.byNS, n.path)
		n = n.parent
	}
}

// candidates calls visit with every node of p that the anchor of q can
// select, and possibly some it cannot (the caller matches each): the nodes at
// and around the anchor when it is a plain path, every node of the partition
// when it is a glob or absent. visit returns false to stop.
func (p *partition) candidates(q *mesh.Query, visit func(*entry) bool) {
	anchors := q.Paths
	if len(anchors) == 0 {
		if q.Path == "" && q.Scope == mesh.ScopeExact {
			p.walk(p.byNS[""], visit) // no anchor
			return
		}
		anchors = []string{q.Path}
	}
	if len(anchors) == 1 {
		p.around(strings.ToLower(anchors[0]), q.Scope, visit)
		return
	}
	seen := map[*entry]bool{} // paths of a list may overlap
	for _, a := range anchors {
		if !p.around(strings.ToLower(a), q.Scope, func(e *entry) bool {
			if seen[e] {
				return true
			}
			seen[e] = true
			return visit(e)
		}) {
			return
		}
	}
}

// sizeHint guesses how many nodes candidates will visit for q, to size the
// result: exact for a children query, 0 when it cannot tell cheaply.
func (p *partition) sizeHint(q *mesh.Query) int {
	if len(q.Paths) > 0 || q.Scope != mesh.ScopeChildren {
		return 0
	}
	if n := p.byNS[strings.ToLower(q.Path)]; n != nil {
		return len(n.nodes)
	}
	return 0
}

// around visits the nodes the lower-cased anchor selects under scope.
func (p *partition) around(anchor string, scope mesh.Scope, visit func(*entry) bool) bool {
	if strings.Contains(anchor, "*") {
		return p.walk(p.byNS[""], visit) // a glob may match anywhere
	}
	exact := func() bool { return p.at(anchor, visit) }
	below := func() bool { return p.walk(p.byNS[anchor], visit) }
	above := func() bool {
		for i := 0; i < len(anchor); i++ {
			if anchor[i] == '/' && !p.at(anchor[:i], visit) {
				return false
			}
		}
		return true
	}
	switch scope {
	case mesh.ScopeExact:
		return exact()
	case mesh.ScopeChildren:
		if n := p.byNS[anchor]; n != nil {
			return visitNodes(n, visit)
		}
		return true
	case mesh.ScopeDescendants:
		return below()
	case mesh.ScopeSubtree:
		return exact() && below()
	case mesh.ScopeAncestors:
		return above()
	case mesh.ScopeHierarchy:
		return above() && exact() && below()
	}
	return p.walk(p.byNS[""], visit) // a scope this index does not know: read all, let the match decide
}

// at visits the nodes whose lower-cased path is path.
func (p *partition) at(path string, visit func(*entry) bool) bool {
	if path == "" {
		return true
	}
	ns, id := mesh.SplitPath(path)
	n := p.byNS[ns]
	if n == nil {
		return true
	}
	for e := n.nodes[id]; e != nil; e = e.next {
		if !visit(e) {
			return false
		}
	}
	return true
}

// walk visits every node in n and below it.
func (p *partition) walk(n *namespace, visit func(*entry) bool) bool {
	if n == nil {
		return true
	}
	if !visitNodes(n, visit) {
		return false
	}
	for _, sub := range n.subs {
		if !p.walk(sub, visit) {
			return false
		}
	}
	return true
}

func visitNodes(n *namespace, visit func(*entry) bool) bool {
	for _, head := range n.nodes {
		for e := head; e != nil; e = e.next {
			if !visit(e) {
				return false
			}
		}
	}
	return true
}

// appendLower appends strings.ToLower(s) to b: byte by byte for ASCII,
// through strings.ToLower otherwise.
func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return append(b, strings.ToLower(s)...)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}
