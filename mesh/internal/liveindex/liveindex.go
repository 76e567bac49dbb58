// Package liveindex finds the live queries a write can concern without
// visiting the others. Stores enter each live query under what it can
// match — the schemas it reads, the node types it names and the place its
// anchor looks — and a write visits only the entries filed under its own
// schema, node type and path (plus the small set filed under "any").
//
// The index is a pre-filter: every entry a write can concern is visited,
// and some it cannot may be (a query whose anchor is a glob, an ancestor
// scope or too long a list, is filed under "anywhere"). The store still
// decides each visited entry with its own rule; the index only spares it
// the entries that rule would have settled anyway.
//
// Adding and removing an entry cost O(1) amortised in the number of
// entries (proportional to the query's own reach, which is bounded); no
// shared structure is rebuilt. An Index is not safe for concurrent use: the
// store guards it with its own lock.
package liveindex

import (
	"strings"

	"github.com/meshrx/meshrx/mesh"
)

// maxCells bounds the cells one entry is filed in: a query reading many
// schemas, types and anchors at once is filed more coarsely (anchors
// first, then types, then schemas become "any", global satellites'
// included), so its cost stays bounded.
const maxCells = 64

// Key is what a live query can match.
type Key struct {
	// Schemas are the schemas the query reads, unless AllPartitions.
	Schemas []string
	// AllPartitions says it reads every partition schema (never a global
	// satellite schema), those created later included.
	AllPartitions bool
	// Types are the node types it can match (any case); nil means any.
	Types []string
	// Query gives the anchor: where in the tree the query looks.
	Query *mesh.Query
}

// Write is what a write or change notice says about the written node. Its
// types and path are lower-cased (strings.ToLower, as mesh.Query.Matches
// folds them): the store has them so already, and folding them here again
// would cost every write.
type Write struct {
	Schema    string // the schema written
	Partition bool   // Schema is a partition, not a global satellite schema
	// Typed says the write's node types are known; when false every type
	// is concerned.
	Typed bool
	// TypeA and TypeB are the node's type before and after the write
	// (lower-cased; equal when it did not change).
	TypeA, TypeB string
	Path         string // the written node's path, lower-cased
}

// anchor kinds: how a filed anchor selects a written path p (lower-cased).
const (
	kindExact    uint8 = iota // p is the anchor
	kindChildren              // p's namespace is the anchor
	kindBelow                 // the anchor is a strict ancestor of p, or the root ""
	kindAnywhere              // p may be anywhere: the store decides
)

type cellKey struct {
	kind   uint8
	anchor string
}

// Index holds entries of V, filed by what they can match.
type Index[V any] struct {
	bySchema  map[string]*schemaSet[V]
	anySchema *schemaSet[V] // AllPartitions: visited by writes to partitions
	// coarse holds the entries naming too many schemas to file one by one;
	// every write visits them, since those schemas may include a global
	// satellite's, which no write to a partition is.
	coarse *schemaSet[V]
	n      int
	epoch  uint64 // stamps the entries one Visit has reached
}

// Entry is one filed value; keep it to Remove the value.
type Entry[V any] struct {
	Value V
	slots []slot[V]
	seen  uint64
	in    bool
}

// slot is one cell an entry is filed in and its place there.
type slot[V any] struct {
	c   *cell[V]
	pos int
}

// cell holds the entries filed under one (schema, type, anchor).
type cell[V any] struct {
	key     cellKey
	owner   *typeSet[V]
	entries []ref[V]
}

type ref[V any] struct {
	e    *Entry[V]
	slot int // index into e.slots
}

// schemaSet holds the entries of one schema (or of any schema) by type.
type schemaSet[V any] struct {
	key     string
	any     bool
	byType  map[string]*typeSet[V]
	anyType *typeSet[V]
}

// typeSet holds the entries of one (schema, type) by anchor.
type typeSet[V any] struct {
	key    string
	any    bool
	owner  *schemaSet[V]
	cells  map[cellKey]*cell[V]
	byKind [4]int // cells of each kind, to skip lookups that cannot hit
}

// New returns an empty index.
func New[V any]() *Index[V] {
	return &Index[V]{bySchema: map[string]*schemaSet[V]{}}
}

// Len returns the number of entries.
func (x *Index[V]) Len() int { return x.n }

// Add files v under k and returns its entry.
func (x *Index[V]) Add(k Key, v V) *Entry[V] {
	e := &Entry[V]{Value: v, in: true}
	schemas, anySchema := k.Schemas, k.AllPartitions
	types := lowerAll(k.Types)
	anchors := anchorsOf(k.Query)
	// Coarsen until the entry's cells are bounded.
	count := func() int { return max(len(schemas), 1) * max(len(types), 1) * max(len(anchors), 1) }
	if count() > maxCells {
		anchors = []cellKey{{kind: kindAnywhere}}
	}
	if count() > maxCells {
		types = nil
	}
	coarse := false
	if count() > maxCells {
		schemas, coarse = nil, !anySchema
	}
	if anySchema {
		schemas = nil
	}
	fileSchema := func(ss *schemaSet[V]) {
		if types == nil {
			if ss.anyType == nil {
				ss.anyType = &typeSet[V]{any: true, owner: ss, cells: map[cellKey]*cell[V]{}}
			}
			x.fileAnchors(e, ss.anyType, anchors)
			return
		}
		for _, t := range types {
			ts := ss.byType[t]
			if ts == nil {
				if ss.byType == nil {
					ss.byType = map[string]*typeSet[V]{}
				}
				ts = &typeSet[V]{key: t, owner: ss, cells: map[cellKey]*cell[V]{}}
				ss.byType[t] = ts
			}
			x.fileAnchors(e, ts, anchors)
		}
	}
	if anySchema {
		if x.anySchema == nil {
			x.anySchema = &schemaSet[V]{any: true}
		}
		fileSchema(x.anySchema)
	}
	if coarse {
		if x.coarse == nil {
			x.coarse = &schemaSet[V]{any: true}
		}
		fileSchema(x.coarse)
	}
	for _, sc := range schemas {
		ss := x.bySchema[sc]
		if ss == nil {
			ss = &schemaSet[V]{key: sc}
			x.bySchema[sc] = ss
		}
		fileSchema(ss)
	}
	x.n++
	return e
}

func (x *Index[V]) fileAnchors(e *Entry[V], ts *typeSet[V], anchors []cellKey) {
	for _, k := range anchors {
		c := ts.cells[k]
		if c == nil {
			c = &cell[V]{key: k, owner: ts}
			ts.cells[k] = c
			ts.byKind[k.kind]++
		}
		if filedLast(c, e) { // a list naming one anchor twice
			continue
		}
		e.slots = append(e.slots, slot[V]{c: c, pos: len(c.entries)})
		c.entries = append(c.entries, ref[V]{e: e, slot: len(e.slots) - 1})
	}
}

// filedLast reports whether e is already in c: while e is being filed no
// other entry is, so it can only be c's last.
func filedLast[V any](c *cell[V], e *Entry[V]) bool {
	return len(c.entries) > 0 && c.entries[len(c.entries)-1].e == e
}

// Remove takes e out of the index; removing it twice is harmless.
func (x *Index[V]) Remove(e *Entry[V]) {
	if !e.in {
		return
	}
	e.in = false
	for i := range e.slots {
		s := e.slots[i]
		c := s.c
		last := len(c.entries) - 1
		if s.pos != last {
			moved := c.entries[last]
			c.entries[s.pos] = moved
			moved.e.slots[moved.slot].pos = s.pos
		}
		c.entries[last] = ref[V]{}
		c.entries = c.entries[:last]
		if len(c.entries) == 0 {
			x.prune(c)
		} else if cap(c.entries) > 8 && len(c.entries) <= cap(c.entries)/4 {
			c.entries = append([]ref[V](nil), c.entries...) // give back a burst's memory
		}
	}
	e.slots = nil
	x.n--
}

// prune removes the empty cell c, and its sets when they are left empty.
func (x *Index[V]) prune(c *cell[V]) {
	ts := c.owner
	delete(ts.cells, c.key)
	ts.byKind[c.key.kind]--
	if len(ts.cells) > 0 {
		return
	}
	ss := ts.owner
	if ts.any {
		ss.anyType = nil
	} else {
		delete(ss.byType, ts.key)
	}
	if ss.anyType != nil || len(ss.byType) > 0 {
		return
	}
	switch {
	case ss == x.anySchema:
		x.anySchema = nil
	case ss == x.coarse:
		x.coarse = nil
	default:
		delete(x.bySchema, ss.key)
	}
}

// Visit calls f once with the value of every entry the write w can
// concern (and possibly some it cannot), and returns how many it called.
func (x *Index[V]) Visit(w Write, f func(V)) int {
	x.epoch++
	visited := 0
	path, typeA, typeB := w.Path, w.TypeA, w.TypeB
	visitSchema := func(ss *schemaSet[V]) {
		if ss == nil {
			return
		}
		if ss.anyType != nil {
			visited += x.visitType(ss.anyType, path, f)
		}
		if !w.Typed {
			for _, ts := range ss.byType {
				visited += x.visitType(ts, path, f)
			}
			return
		}
		if ts := ss.byType[typeA]; ts != nil {
			visited += x.visitType(ts, path, f)
		}
		if typeB != typeA {
			if ts := ss.byType[typeB]; ts != nil {
				visited += x.visitType(ts, path, f)
			}
		}
	}
	visitSchema(x.bySchema[w.Schema])
	if w.Partition {
		visitSchema(x.anySchema)
	}
	visitSchema(x.coarse)
	return visited
}

// visitType visits the cells of ts that the lower-cased path can lie in.
func (x *Index[V]) visitType(ts *typeSet[V], path string, f func(V)) int {
	visited := 0
	visitCell := func(k cellKey) {
		c := ts.cells[k]
		if c == nil {
			return
		}
		for _, r := range c.entries {
			if r.e.seen == x.epoch {
				continue // reached through another cell
			}
			r.e.seen = x.epoch
			visited++
			f(r.e.Value)
		}
	}
	if ts.byKind[kindAnywhere] > 0 {
		visitCell(cellKey{kind: kindAnywhere})
	}
	if ts.byKind[kindExact] > 0 {
		visitCell(cellKey{kind: kindExact, anchor: path})
	}
	if ts.byKind[kindChildren] > 0 {
		ns, _ := mesh.SplitPath(path)
		visitCell(cellKey{kind: kindChildren, anchor: ns})
	}
	if ts.byKind[kindBelow] > 0 {
		visitCell(cellKey{kind: kindBelow, anchor: ""})
		for i := 0; i < len(path); i++ {
			if path[i] == '/' {
				visitCell(cellKey{kind: kindBelow, anchor: path[:i]})
			}
		}
	}
	return visited
}

// All calls f with the value of every entry once.
func (x *Index[V]) All(f func(V)) {
	x.epoch++
	visit := func(ss *schemaSet[V]) {
		if ss == nil {
			return
		}
		sets := make([]*typeSet[V], 0, len(ss.byType)+1)
		if ss.anyType != nil {
			sets = append(sets, ss.anyType)
		}
		for _, ts := range ss.byType {
			sets = append(sets, ts)
		}
		for _, ts := range sets {
			for _, c := range ts.cells {
				for _, r := range c.entries {
					if r.e.seen != x.epoch {
						r.e.seen = x.epoch
						f(r.e.Value)
					}
				}
			}
		}
	}
	visit(x.anySchema)
	visit(x.coarse)
	for _, ss := range x.bySchema {
		visit(ss)
	}
}

// anchorsOf returns the cells q's anchor is filed under: one per literal
// anchor path and scope it can decide cheaply, or the one "anywhere" cell.
// Paths are lower-cased, as mesh.Query.Matches compares them.
func anchorsOf(q *mesh.Query) []cellKey {
	anywhere := []cellKey{{kind: kindAnywhere}}
	if q == nil {
		return anywhere
	}
	anchors := q.Paths
	if len(anchors) == 0 {
		if q.Path == "" && q.Scope == mesh.ScopeExact {
			return anywhere // no anchor: the whole tree
		}
		anchors = []string{q.Path}
	}
	var kinds []uint8
	switch q.Scope {
	case mesh.ScopeExact:
		kinds = []uint8{kindExact}
	case mesh.ScopeChildren:
		kinds = []uint8{kindChildren}
	case mesh.ScopeDescendants:
		kinds = []uint8{kindBelow}
	case mesh.ScopeSubtree:
		kinds = []uint8{kindExact, kindBelow}
	default: // ancestors and hierarchy look up the tree: rare, left to the store
		return anywhere
	}
	out := make([]cellKey, 0, len(anchors)*len(kinds))
	for _, a := range anchors {
		if strings.Contains(a, "*") {
			return anywhere
		}
		a = strings.ToLower(a)
		for _, k := range kinds {
			out = append(out, cellKey{kind: k, anchor: a})
		}
	}
	return out
}

// noType files a query constrained to no type at all (nodeType:A
// nodeType:B): it matches nothing, but must still be found by All.
const noType = "\x00none"

func lowerAll(types []string) []string {
	if types == nil {
		return nil
	}
	if len(types) == 0 {
		return []string{noType}
	}
	out := make([]string, 0, len(types))
	for _, t := range types {
		t = strings.ToLower(t)
		dup := false
		for _, o := range out {
			dup = dup || o == t
		}
		if !dup {
			out = append(out, t)
		}
	}
	return out
}
