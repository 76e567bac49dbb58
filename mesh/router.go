package mesh

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
)

// RouteKind is the outcome of routing a query.
type RouteKind uint8

const (
	Pinned     RouteKind = iota + 1 // one partition schema answers the query
	FanOut                          // several schemas are read and merged
	Unroutable                      // no schema can hold the answer: it is empty
)

func (k RouteKind) String() string {
	switch k {
	case Pinned:
		return "pinned"
	case FanOut:
		return "fan-out"
	case Unroutable:
		return "unroutable"
	}
	return fmt.Sprintf("RouteKind(%d)", uint8(k))
}

// Route says which partition schemas serve a query.
type Route struct {
	Kind     RouteKind
	Schemas  []string // schemas to read, sorted; empty for Unroutable
	Anchored bool     // the query itself names its partitions
	Narrowed bool     // an unanchored fan-out read only its type's declared instance locations
	Shape    string   // DescribeShape of the query
}

// RouterConfig configures a Router. The zero value is ready to use.
type RouterConfig struct {
	// GlobalSatellites maps a first segment starting with _ to the schema that
	// holds it; nil means DefaultGlobalSatellites.
	GlobalSatellites map[string]string
	// Allow lists the unanchored shapes served without partitions:all; nil
	// means the embedded mesh/unanchored-queries.allow.
	Allow *AllowList
	// InstanceLocations maps a node type to query strings (path:X,
	// namespace:X, namespace:A|B) declaring the partitions its instances live
	// in. An unanchored query for that one type reads only those partitions.
	InstanceLocations map[string][]string
	// GatedTypes are node types a reader must see whole, never narrowed by
	// InstanceLocations, besides SecurityTypes, which are never narrowed
	// whatever this says: where an access fold reads, a short read is a
	// vanished grant or a deny that fails open.
	GatedTypes []string
	// Logger receives one warning per unanchored fan-out; nil means
	// slog.Default().
	Logger *slog.Logger
}

// RouterConfigError reports an invalid RouterConfig entry.
type RouterConfigError struct {
	Field  string // the RouterConfig field
	Key    string // the offending key or value
	Reason string
}

func (e *RouterConfigError) Error() string {
	return fmt.Sprintf("mesh: router config %s %q: %s", e.Field, e.Key, e.Reason)
}

// InstanceLocationError reports an InstanceLocations declaration the router
// refuses.
type InstanceLocationError struct {
	NodeType string
	Location string // the offending query string; "" when the type itself is refused
	Reason   string
	Err      error // the *ParseError of a location that does not parse
}

func (e *InstanceLocationError) Error() string {
	msg := fmt.Sprintf("mesh: instance locations of node type %q", e.NodeType)
	if e.Location != "" {
		msg += fmt.Sprintf(" (location %s)", quoteClipped(e.Location, 80))
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *InstanceLocationError) Unwrap() error { return e.Err }

// Router decides which partition schemas serve a query. It is immutable and
// safe for concurrent use. Make one with NewRouter: a nil or zero Router
// knows no schema (Route refuses every query with an *ArgumentError,
// SchemaFor and GlobalSchema answer false) and narrows nothing
// (NeverNarrowed answers true).
type Router struct {
	globals       map[string]string   // lower-cased _segment → schema
	allow         *AllowList          //
	locations     map[string][]string // lower-cased node type → sorted schemas
	neverNarrowed map[string]bool     // lower-cased node types
	log           *slog.Logger
}

// NewRouter returns a Router for cfg. It refuses an InstanceLocations
// declaration on a never-narrowed type, or one that names no partition, with
// an *InstanceLocationError.
func NewRouter(cfg RouterConfig) (*Router, error) {
	r := &Router{
		globals:       map[string]string{},
		allow:         cfg.Allow,
		locations:     map[string][]string{},
		neverNarrowed: map[string]bool{},
		log:           cfg.Logger,
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.allow == nil {
		a, err := DefaultAllowList()
		if err != nil {
			return nil, err
		}
		r.allow = a
	}
	globals := cfg.GlobalSatellites
	if globals == nil {
		globals = DefaultGlobalSatellites()
	}
	for _, seg := range slices.Sorted(maps.Keys(globals)) {
		switch {
		case len(seg) < 2 || seg[0] != '_' || strings.Contains(seg, "/"):
			return nil, &RouterConfigError{Field: "GlobalSatellites", Key: seg,
				Reason: "a global satellite is one first segment starting with _, such as _Access"}
		case globals[seg] == "":
			return nil, &RouterConfigError{Field: "GlobalSatellites", Key: seg, Reason: "needs a schema name"}
		}
		r.globals[FoldName(seg)] = FoldName(globals[seg])
	}
	for _, t := range SecurityTypes() {
		r.neverNarrowed[strings.ToLower(t)] = true
	}
	for _, t := range cfg.GatedTypes {
		if strings.TrimSpace(t) == "" {
			return nil, &RouterConfigError{Field: "GatedTypes", Key: t, Reason: "empty node type"}
		}
		r.neverNarrowed[strings.ToLower(t)] = true
	}
	for _, t := range slices.Sorted(maps.Keys(cfg.InstanceLocations)) {
		if err := r.declare(t, cfg.InstanceLocations[t]); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Router) declare(nodeType string, locs []string) error {
	if len(locs) == 0 {
		return nil // undeclared: fan out in full
	}
	key := strings.ToLower(nodeType)
	if r.neverNarrowed[key] {
		return &InstanceLocationError{NodeType: nodeType, Reason: "the type is gated (mesh.SecurityTypes or RouterConfig.GatedTypes), never narrowed: " +
			"an access fold reads it, and there a short read is a vanished grant or a deny that fails open; remove the declaration"}
	}
	if _, dup := r.locations[key]; dup {
		return &InstanceLocationError{NodeType: nodeType, Reason: "declared twice (node types compare case-insensitively)"}
	}
	var schemas []string
	for _, loc := range locs {
		q, err := Parse(loc)
		if err != nil {
			return &InstanceLocationError{NodeType: nodeType, Location: loc, Reason: "location does not parse", Err: err}
		}
		firsts, ok := anchorSegments(q)
		if !ok {
			return &InstanceLocationError{NodeType: nodeType, Location: loc,
				Reason: "location names no concrete partition; write path:X, namespace:X or namespace:A|B"}
		}
		for _, f := range firsts {
			s, ok := r.schemaFor(f)
			if !ok {
				return &InstanceLocationError{NodeType: nodeType, Location: loc,
					Reason: fmt.Sprintf("location's first segment %q is an unregistered global satellite", f)}
			}
			schemas = append(schemas, s)
		}
	}
	slices.Sort(schemas)
	r.locations[key] = slices.Compact(schemas)
	return nil
}

// NeverNarrowed reports whether reads of nodeType are never narrowed to
// declared instance locations; always true for a Router not made by
// NewRouter.
func (r *Router) NeverNarrowed(nodeType string) bool {
	if !r.made() {
		return true
	}
	return r.neverNarrowed[strings.ToLower(nodeType)]
}

// made reports whether r was made by NewRouter, which always sets globals.
func (r *Router) made() bool { return r != nil && r.globals != nil }

// Route returns the schemas that serve q, given partitions, the store's
// known partition schemas.
//
// A query whose path (or every path of its list, or a namespace filter on
// every OR branch) has a concrete first segment is anchored: one schema gives
// Pinned, several give an anchored FanOut over exactly those. A first segment
// starting with _ resolves through the global satellites; an unregistered one
// gives Unroutable, an empty answer. Any other query is unanchored: it is
// refused with an *UnanchoredQueryError (and a Route of Kind FanOut with no
// schemas) unless it says partitions:all or its shape is on the allow list.
// An allowed unanchored fan-out reads partitions, narrowed to the declared
// instance locations of its single node type, and logs one warning.
//
// A nil q, or a Router not made by NewRouter, is an *ArgumentError.
func (r *Router) Route(q *Query, partitions []string) (Route, error) {
	if !r.made() {
		return Route{}, &ArgumentError{Func: "mesh.(*Router).Route", Arg: "receiver", Reason: "must be made by mesh.NewRouter"}
	}
	if q == nil {
		return Route{}, nilArg("mesh.(*Router).Route", "q")
	}
	shape := DescribeShape(q)
	if firsts, ok := anchorSegments(q); ok {
		var schemas []string
		for _, f := range firsts {
			if s, ok := r.schemaFor(f); ok {
				schemas = append(schemas, s)
			}
		}
		slices.Sort(schemas)
		schemas = slices.Compact(schemas)
		route := Route{Kind: FanOut, Schemas: schemas, Anchored: true, Shape: shape}
		switch len(schemas) {
		case 0:
			route.Kind, route.Schemas = Unroutable, nil
		case 1:
			route.Kind = Pinned
		}
		return route, nil
	}
	declared := "partitions:all"
	if !q.AllPartitions {
		if !r.allow.Allows(shape) {
			return Route{Kind: FanOut, Shape: shape}, &UnanchoredQueryError{Query: q.String(), Shape: shape}
		}
		declared = "allow list"
	}
	schemas := make([]string, 0, len(partitions))
	for _, p := range partitions {
		if p != "" {
			schemas = append(schemas, FoldName(p))
		}
	}
	slices.Sort(schemas)
	schemas = slices.Compact(schemas)
	narrowed := false
	if t, ok := singleNodeType(q.Filter); ok {
		if locs, ok := r.locationsFor(t); ok {
			schemas = slices.DeleteFunc(schemas, func(s string) bool {
				_, found := slices.BinarySearch(locs, s)
				return !found
			})
			narrowed = true
		}
	}
	r.log.Warn("mesh: unanchored query fans out over partition schemas",
		"shape", shape, "schemas", len(schemas), "declared", declared, "narrowed", narrowed)
	return Route{Kind: FanOut, Schemas: schemas, Narrowed: narrowed, Shape: shape}, nil
}

// SchemaFor returns the schema that holds path: its lower-cased partition, or
// for a _-prefixed first segment the registered global-satellite schema. ok is
// false for an unregistered global satellite or an empty path, and for a
// Router not made by NewRouter.
func (r *Router) SchemaFor(path string) (schema string, ok bool) {
	first := Partition(path)
	if first == "" || !r.made() {
		return "", false
	}
	return r.schemaFor(first)
}

// GlobalSchema reports whether schema (any ASCII case) holds a registered
// global satellite. A store must not keep a partition there: a fan-out over
// the partitions would then read the satellite. A Router not made by
// NewRouter registers none.
func (r *Router) GlobalSchema(schema string) bool {
	if !r.made() {
		return false
	}
	schema = FoldName(schema)
	for _, s := range r.globals {
		if s == schema {
			return true
		}
	}
	return false
}

// locationsFor returns the declared schemas of nodeType. Never-narrowed types
// have none, whatever was declared: they fail open to a full fan-out.
func (r *Router) locationsFor(nodeType string) ([]string, bool) {
	key := strings.ToLower(nodeType)
	if r.neverNarrowed[key] {
		return nil, false
	}
	locs, ok := r.locations[key]
	return locs, ok
}

// schemaFor returns the schema of a concrete first segment; ok is false for an
// unregistered global satellite.
func (r *Router) schemaFor(first string) (string, bool) {
	if strings.HasPrefix(first, "_") {
		s, ok := r.globals[FoldName(first)]
		return s, ok
	}
	return FoldName(first), true
}

// anchorSegments returns the first segments the query is confined to, and
// whether it is confined at all: by its path, by every entry of its path list,
// or by a namespace filter on every OR branch.
func anchorSegments(q *Query) ([]string, bool) {
	if len(q.Paths) > 0 {
		firsts := make([]string, 0, len(q.Paths))
		for _, p := range q.Paths {
			f := Partition(p)
			if !concreteSegment(f) {
				return namespaceAnchors(q.Filter)
			}
			firsts = append(firsts, f)
		}
		return firsts, true
	}
	if f := Partition(q.Path); concreteSegment(f) {
		return []string{f}, true
	}
	return namespaceAnchors(q.Filter)
}

func concreteSegment(s string) bool { return s != "" && !strings.Contains(s, "*") }

// namespaceAnchors returns the first segments of a namespace Eq, In or Like
// filter that confines every OR branch (through any AND term).
func namespaceAnchors(e Expr) ([]string, bool) {
	switch e := e.(type) {
	case Cond:
		if e.Field != "namespace" || (e.Op != OpEq && e.Op != OpIn && e.Op != OpLike) || len(e.Values) == 0 {
			return nil, false
		}
		firsts := make([]string, 0, len(e.Values))
		for _, v := range e.Values {
			f := Partition(v)
			if !concreteSegment(f) {
				return nil, false
			}
			firsts = append(firsts, f)
		}
		return firsts, true
	case And:
		for _, t := range e {
			if firsts, ok := namespaceAnchors(t); ok {
				return firsts, true
			}
		}
	case Or:
		if len(e) == 0 {
			return nil, false
		}
		var firsts []string
		for _, t := range e {
			f, ok := namespaceAnchors(t)
			if !ok {
				return nil, false
			}
			firsts = append(firsts, f...)
		}
		return firsts, true
	}
	return nil, false
}
