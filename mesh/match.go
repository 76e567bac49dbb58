package mesh

import (
	"github.com/meshrx/meshrx/mesh/internal/scalar"

	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Matches reports whether q selects n: n lies within the anchor, satisfies the
// filter and contains every free-text term. Sort, Limit, Select and
// AllPartitions do not affect it. A nil Query matches every node.
//
// Comparisons are case-insensitive. Two values that both read as numbers
// compare as numbers, two RFC 3339 times (or dates) as times, anything else as
// strings. A value with * is a glob. content.a.b reads the JSON content (an
// array matches when any element does); a negated condition holds exactly when
// its positive form does not, so -content.x:1 holds for a node without x.
func (q *Query) Matches(n Node) bool {
	if q == nil {
		return true
	}
	v := &nodeView{n: &n}
	v.path, v.ns = pathOf(n), n.Namespace
	if v.ns == "" && strings.Contains(v.path, "/") {
		v.ns, _ = SplitPath(v.path)
	}
	if !q.matchesAnchor(v) {
		return false
	}
	if q.Filter != nil && !v.eval(q.Filter) {
		return false
	}
	for _, t := range q.Text {
		if !strings.Contains(v.haystack(), strings.ToLower(t)) {
			return false
		}
	}
	return true
}

func pathOf(n Node) string {
	if n.Path != "" {
		return n.Path
	}
	return JoinPath(n.Namespace, n.ID)
}

func (q *Query) matchesAnchor(v *nodeView) bool {
	if len(q.Paths) > 0 {
		for _, p := range q.Paths {
			if inScope(q.Scope, p, v.path, v.ns) {
				return true
			}
		}
		return false
	}
	if q.Path == "" && q.Scope == ScopeExact {
		return true // no anchor
	}
	return inScope(q.Scope, q.Path, v.path, v.ns)
}

// inScope reports whether the node at path (in namespace ns) is selected by
// anchor under scope. The anchor may hold * globs.
func inScope(scope Scope, anchor, path, ns string) bool {
	a := []rune(strings.ToLower(anchor))
	p := strings.ToLower(path)
	exact := func() bool { return globMatch(a, []rune(p)) }
	descendant := func() bool {
		for i := 0; i < len(p); i++ {
			if (i == 0 || p[i] == '/') && globMatch(a, []rune(p[:i])) {
				return true
			}
		}
		return false
	}
	ancestor := func() bool { return globExtends(a, []rune(p+"/")) }
	switch scope {
	case ScopeExact:
		return exact()
	case ScopeChildren:
		return globMatch(a, []rune(strings.ToLower(ns)))
	case ScopeDescendants:
		return descendant()
	case ScopeSubtree:
		return exact() || descendant()
	case ScopeAncestors:
		return ancestor()
	case ScopeHierarchy:
		return ancestor() || exact() || descendant()
	}
	return false
}

// globMatch reports whether s matches pattern p, in which * matches any run
// of runes. Both are already lower-cased.
func globMatch(p, s []rune) bool {
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && p[pi] == s[si]:
			pi++
			si++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// globExtends reports whether p matches prefix followed by at least one more
// rune, for some choice of those runes.
func globExtends(p, prefix []rune) bool {
	states := make([]bool, len(p)+1)
	states[0] = true
	closeStars := func(st []bool) {
		for i := range p {
			if st[i] && p[i] == '*' {
				st[i+1] = true
			}
		}
	}
	closeStars(states)
	for _, r := range prefix {
		next := make([]bool, len(p)+1)
		alive := false
		for i := range p {
			if !states[i] {
				continue
			}
			if p[i] == '*' {
				next[i], alive = true, true
			} else if p[i] == r {
				next[i+1], alive = true, true
			}
		}
		if !alive {
			return false
		}
		closeStars(next)
		states = next
	}
	// From any position short of the end, the rest of the pattern matches some
	// non-empty string: its literal runes, or one rune for a run of stars.
	return slices.Contains(states[:len(p)], true)
}

// nodeView caches what matching one node needs: its decoded content and its
// free-text haystack, each computed at most once.
type nodeView struct {
	n        *Node
	path, ns string
	content  any
	decoded  bool
	text     string
	hasText  bool
}

func (v *nodeView) eval(e Expr) bool {
	switch e := e.(type) {
	case And:
		for _, t := range e {
			if !v.eval(t) {
				return false
			}
		}
		return true
	case Or:
		for _, t := range e {
			if v.eval(t) {
				return true
			}
		}
		return false
	case Cond:
		return v.evalCond(e)
	}
	return false
}

func (v *nodeView) evalCond(c Cond) bool {
	have := v.values(c.Field)
	anyMatch := func() bool {
		for _, h := range have {
			for _, w := range c.Values {
				if valueMatches(h, w) {
					return true
				}
			}
		}
		return false
	}
	switch c.Op {
	case OpEq, OpLike, OpIn:
		return anyMatch()
	case OpNe, OpNotLike, OpNotIn:
		return !anyMatch()
	}
	if len(c.Values) == 0 {
		return false
	}
	for _, h := range have {
		d := compareValues(h, c.Values[0])
		switch {
		case c.Op == OpGt && d > 0, c.Op == OpGe && d >= 0, c.Op == OpLt && d < 0, c.Op == OpLe && d <= 0:
			return true
		}
	}
	return false
}

// values returns the values of field on the node; none when it is absent.
func (v *nodeView) values(field string) []string {
	n := v.n
	switch field {
	case "id":
		_, id := SplitPath(v.path)
		return []string{id}
	case "namespace":
		return []string{v.ns}
	case "path":
		return []string{v.path}
	case "name":
		return []string{n.Name}
	case "nodeType":
		return []string{n.NodeType}
	case "mainNode":
		if n.MainNode == "" {
			return []string{v.path}
		}
		return []string{n.MainNode}
	case "state":
		return []string{n.State.String()}
	case "version":
		return []string{strconv.FormatInt(n.Version, 10)}
	case "lastModified":
		return []string{n.LastModified.UTC().Format(time.RFC3339Nano)}
	case "content":
		if len(n.Content) == 0 {
			return nil
		}
		return []string{string(n.Content)}
	}
	prop, ok := strings.CutPrefix(field, "content.")
	if !ok {
		return nil
	}
	var out []string
	collectValues(v.decodedContent(), strings.Split(prop, "."), &out)
	return out
}

func (v *nodeView) decodedContent() any {
	if !v.decoded {
		v.decoded = true
		v.content = decodeContent(v.n.Content)
	}
	return v.content
}

func decodeContent(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var c any
	if dec.Decode(&c) != nil {
		return nil
	}
	return c
}

// collectValues appends the scalar values at the property path segs of v.
// Keys match case-insensitively when there is no exact match; arrays fan out.
func collectValues(v any, segs []string, out *[]string) {
	if len(segs) == 0 {
		collectScalars(v, out, false)
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if child, ok := t[segs[0]]; ok {
			collectValues(child, segs[1:], out)
			return
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			if strings.EqualFold(k, segs[0]) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			collectValues(t[k], segs[1:], out)
		}
	case []any:
		for _, e := range t {
			collectValues(e, segs, out)
		}
	}
}

// collectScalars appends the scalars of v: v itself, or the elements of an
// array. With deep, the scalars nested in objects are included too.
func collectScalars(v any, out *[]string, deep bool) {
	switch t := v.(type) {
	case string:
		*out = append(*out, t)
	case json.Number:
		*out = append(*out, t.String())
	case bool:
		*out = append(*out, strconv.FormatBool(t))
	case []any:
		for _, e := range t {
			collectScalars(e, out, deep)
		}
	case map[string]any:
		if !deep {
			return
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			collectScalars(t[k], out, deep)
		}
	}
}

// haystack is the lower-cased text free-text terms are looked up in: name,
// path, node type and every scalar in the content.
func (v *nodeView) haystack() string {
	if !v.hasText {
		parts := []string{v.n.Name, v.path, v.n.NodeType}
		collectScalars(v.decodedContent(), &parts, true)
		v.text, v.hasText = strings.ToLower(strings.Join(parts, "\x00")), true
	}
	return v.text
}

// valueMatches reports whether a node value equals a query value, or matches
// it as a glob when the query value holds a *.
func valueMatches(have, want string) bool {
	if strings.Contains(want, "*") {
		return globMatch([]rune(strings.ToLower(want)), []rune(strings.ToLower(have)))
	}
	return compareValues(have, want) == 0
}

// compareValues compares as numbers when both read as numbers, as times when
// both read as times, and as case-insensitive strings otherwise.
func compareValues(a, b string) int {
	if na, ok := scalar.ParseNumber(a); ok {
		if nb, ok := scalar.ParseNumber(b); ok {
			return na.Compare(nb)
		}
	}
	if ta, ok := scalar.ParseTime(a); ok {
		if tb, ok := scalar.ParseTime(b); ok {
			return ta.Compare(tb)
		}
	}
	return strings.Compare(strings.ToLower(a), strings.ToLower(b))
}

// NodeTypes returns the node types q can possibly match, when its filter pins
// the node type on every OR branch (nodeType:A, nodeType:A|B). constrained is
// false when any type could match; then types is nil. A change to a node whose
// type is not in types cannot alter the result of a constrained query. Types
// are compared case-insensitively, listed once each in sorted order.
func (q *Query) NodeTypes() (types []string, constrained bool) {
	if q == nil || q.Filter == nil {
		return nil, false
	}
	set, ok := nodeTypesOf(q.Filter)
	if !ok {
		return nil, false
	}
	types = make([]string, 0, len(set))
	for _, t := range set {
		types = append(types, t)
	}
	slices.SortFunc(types, func(a, b string) int {
		return cmp.Or(strings.Compare(strings.ToLower(a), strings.ToLower(b)), strings.Compare(a, b))
	})
	return types, true
}

// nodeTypesOf returns the node types e admits, keyed by lower-cased type.
func nodeTypesOf(e Expr) (map[string]string, bool) {
	switch e := e.(type) {
	case Cond:
		if e.Field != "nodeType" || (e.Op != OpEq && e.Op != OpIn) {
			return nil, false
		}
		set := map[string]string{}
		for _, v := range e.Values {
			// A glob, number or time compares by more than its spelling.
			if strings.Contains(v, "*") {
				return nil, false
			}
			if _, ok := scalar.ParseNumber(v); ok {
				return nil, false
			}
			if _, ok := scalar.ParseTime(v); ok {
				return nil, false
			}
			if _, dup := set[strings.ToLower(v)]; !dup {
				set[strings.ToLower(v)] = v
			}
		}
		return set, true
	case And:
		var set map[string]string
		for _, t := range e {
			ts, ok := nodeTypesOf(t)
			if !ok {
				continue
			}
			if set == nil {
				set = ts
				continue
			}
			for k := range set {
				if _, keep := ts[k]; !keep {
					delete(set, k)
				}
			}
		}
		return set, set != nil
	case Or:
		set := map[string]string{}
		for _, t := range e {
			ts, ok := nodeTypesOf(t)
			if !ok {
				return nil, false
			}
			for k, v := range ts {
				if _, dup := set[k]; !dup {
					set[k] = v
				}
			}
		}
		return set, true
	}
	return nil, false
}

// Less reports whether a sorts before b in q's order: by the sort field
// (descending if asked; nodes without the field last), then by path ascending.
// It is a strict weak order for any set of nodes: numbers sort before times,
// times before other strings.
func (q *Query) Less(a, b Node) bool {
	if q != nil && q.Sort.Field != "" {
		ka, okA := sortKey(a, q.Sort.Field)
		kb, okB := sortKey(b, q.Sort.Field)
		switch {
		case okA && !okB:
			return true
		case !okA && okB:
			return false
		case okA && okB:
			if c := ka.compare(kb); c != 0 {
				return (c < 0) != q.Sort.Desc
			}
		}
	}
	return pathOf(a) < pathOf(b)
}

type sortValue struct {
	kind int // 0 number, 1 time, 2 string
	num  scalar.Number
	t    time.Time
	s    string
}

func sortKey(n Node, field string) (sortValue, bool) {
	v := &nodeView{n: &n, path: pathOf(n), ns: n.Namespace}
	if v.ns == "" && strings.Contains(v.path, "/") {
		v.ns, _ = SplitPath(v.path)
	}
	vals := v.values(field)
	if len(vals) == 0 {
		return sortValue{}, false
	}
	s := vals[0]
	if num, ok := scalar.ParseNumber(s); ok {
		return sortValue{kind: 0, num: num}, true
	}
	if t, ok := scalar.ParseTime(s); ok {
		return sortValue{kind: 1, t: t}, true
	}
	return sortValue{kind: 2, s: strings.ToLower(s)}, true
}

func (a sortValue) compare(b sortValue) int {
	if a.kind != b.kind {
		return cmp.Compare(a.kind, b.kind)
	}
	switch a.kind {
	case 0:
		return a.num.Compare(b.num)
	case 1:
		return a.t.Compare(b.t)
	}
	return strings.Compare(a.s, b.s)
}
