package mesh

import (
	"strconv"
	"strings"
	"unicode"
)

// Query is a parsed query: which nodes to read, in what order, how many.
// Build one with Parse; its String form parses back to an equal Query.
// The methods of a nil *Query behave as those of the zero Query.
//
// The anchor is where in the tree the query looks: Path with Scope, or each of
// Paths with Scope. With no anchor (Path and Paths empty and Scope exact) the
// query looks everywhere. Path "" with another scope is anchored at the root.
type Query struct {
	Filter        Expr     // field conditions; nil means none
	Text          []string // free-text terms; every one must occur
	Path          string   // anchor path from path: or namespace: (may hold * globs)
	Paths         []string // explicit path list from [a, b] or path:a|b
	Scope         Scope    // how the anchor selects nodes
	Sort          Sort     // order; the zero Sort is path ascending
	Limit         int      // 0: none given; LimitAll: limit:all; otherwise N > 0
	Select        []string // projected fields, canonical names: a store's frames hold only these and the path (Project)
	AllPartitions bool     // partitions:all, an explicit mesh-wide declaration
}

// LimitAll is the Limit of a query that says limit:all: every row, never a page.
const LimitAll = -1

// Scope says which nodes an anchor path selects.
type Scope uint8

const (
	ScopeExact       Scope = iota // the node at the path
	ScopeChildren                 // nodes whose namespace is the path
	ScopeDescendants              // nodes strictly below the path
	ScopeSubtree                  // the path and every node below it
	ScopeAncestors                // strict ancestors of the path
	ScopeHierarchy                // ancestors, the node itself and descendants
)

func scopeNames() [6]string {
	return [...]string{"exact", "children", "descendants", "subtree", "ancestors", "hierarchy"}
}

// String returns the lower-case scope word used in queries.
func (s Scope) String() string {
	if names := scopeNames(); int(s) < len(names) {
		return names[s]
	}
	return "scope(" + strconv.Itoa(int(s)) + ")"
}

// ParseScope returns the scope named s (ASCII case-insensitive: EqualNames).
func ParseScope(s string) (Scope, bool) {
	for i, name := range scopeNames() {
		if EqualNames(s, name) {
			return Scope(i), true
		}
	}
	return 0, false
}

// Sort orders results by Field, then by path ascending. The zero Sort orders
// by path ascending alone.
type Sort struct {
	Field string // canonical field name; "" means path
	Desc  bool
}

// Op is the operator of a Cond.
type Op uint8

const (
	OpEq      Op = iota // equal (case-insensitive)
	OpNe                // not equal
	OpGt                // greater than
	OpGe                // greater than or equal
	OpLt                // less than
	OpLe                // less than or equal
	OpIn                // equal to one of Values; a value with * is a glob
	OpNotIn             // equal to none of Values
	OpLike              // glob match; * matches any run of characters
	OpNotLike           // no glob match
)

func (o Op) String() string {
	names := [...]string{"eq", "ne", "gt", "ge", "lt", "le", "in", "notIn", "like", "notLike"}
	if int(o) < len(names) {
		return names[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// negated reports whether the operator is the negation of a positive one.
func (o Op) negated() bool { return o == OpNe || o == OpNotIn || o == OpNotLike }

// Expr is a filter expression: And, Or or Cond.
type Expr interface {
	String() string
	isExpr()
}

// And holds when every term holds.
type And []Expr

// Or holds when any term holds.
type Or []Expr

// Cond compares one field of a node with Values.
type Cond struct {
	Field  string // canonical: id, namespace, name, nodeType, mainNode, state, version, lastModified, content.a.b
	Op     Op
	Values []string // one value, or several for OpIn and OpNotIn
}

func (And) isExpr()  {}
func (Or) isExpr()   {}
func (Cond) isExpr() {}

func (a And) String() string { return joinExprs(a, " ", false) }
func (o Or) String() string  { return joinExprs(o, " OR ", true) }

func joinExprs(terms []Expr, sep string, inOr bool) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = exprTerm(t, inOr)
	}
	return strings.Join(parts, sep)
}

// exprTerm renders t as one term of an And (inOr false) or an Or (inOr true),
// parenthesised where precedence needs it.
func exprTerm(t Expr, inOr bool) string {
	switch t := t.(type) {
	case Or:
		return "(" + t.String() + ")"
	case And:
		if inOr && len(t) > 1 {
			return "(" + t.String() + ")"
		}
		return t.String()
	case nil:
		return ""
	}
	return t.String()
}

func (c Cond) String() string {
	var b strings.Builder
	if c.Op.negated() {
		b.WriteByte('-')
	}
	b.WriteString(c.Field)
	b.WriteByte(':')
	switch c.Op {
	case OpGt:
		b.WriteByte('>')
	case OpGe:
		b.WriteString(">=")
	case OpLt:
		b.WriteByte('<')
	case OpLe:
		b.WriteString("<=")
	}
	if len(c.Values) == 0 {
		b.WriteString(`""`)
	}
	for i, v := range c.Values {
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(quoteValue(v))
	}
	return b.String()
}

// String returns the canonical form of q. For a Query returned by Parse,
// Parse(q.String()) returns an equal Query, and spellings of the same query
// share one canonical form.
func (q *Query) String() string {
	if q == nil {
		return ""
	}
	var parts []string
	if len(q.Paths) > 0 {
		entries := make([]string, len(q.Paths))
		for i, p := range q.Paths {
			entries[i] = quoteListEntry(p)
		}
		parts = append(parts, "["+strings.Join(entries, ", ")+"]")
	} else if q.Path != "" {
		parts = append(parts, "path:"+quoteValue(q.Path))
	}
	if q.Scope != ScopeExact {
		parts = append(parts, "scope:"+q.Scope.String())
	}
	if q.Filter != nil {
		parts = append(parts, exprTerm(q.Filter, false))
	}
	for _, t := range q.Text {
		parts = append(parts, quoteText(t))
	}
	if q.Sort.Field != "" {
		dir := "-asc"
		if q.Sort.Desc {
			dir = "-desc"
		}
		parts = append(parts, "sort:"+quoteValue(q.Sort.Field+dir))
	}
	switch {
	case q.Limit == LimitAll:
		parts = append(parts, "limit:all")
	case q.Limit > 0:
		parts = append(parts, "limit:"+strconv.Itoa(q.Limit))
	}
	if len(q.Select) > 0 {
		parts = append(parts, "select:"+quoteValue(strings.Join(q.Select, ",")))
	}
	if q.AllPartitions {
		parts = append(parts, "partitions:all")
	}
	return strings.Join(parts, " ")
}

// quoteValue quotes a field value when it would not read back as itself bare.
func quoteValue(v string) string {
	if v == "" || strings.ContainsAny(v, "|()\"'\\") || strings.ContainsFunc(v, unicode.IsSpace) ||
		strings.ContainsAny(v[:1], "<>=") {
		return quote(v)
	}
	return v
}

// quoteText quotes a free-text term when bare it would read as something else:
// a field, a keyword, a negation, a group or a path list.
func quoteText(t string) string {
	if t == "" || strings.ContainsAny(t, "():\"'\\") || strings.ContainsFunc(t, unicode.IsSpace) ||
		strings.ContainsAny(t[:1], "-[") || EqualNames(t, "or") || EqualNames(t, "and") {
		return quote(t)
	}
	return t
}

func quoteListEntry(p string) string {
	if strings.ContainsAny(p, ",[]") {
		return quote(p)
	}
	return quoteValue(p)
}

func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// nodeField returns the canonical spelling of a lower-cased node field name.
func nodeField(lower string) (string, bool) {
	switch lower {
	case "id":
		return "id", true
	case "namespace":
		return "namespace", true
	case "path":
		return "path", true
	case "name":
		return "name", true
	case "nodetype":
		return "nodeType", true
	case "mainnode":
		return "mainNode", true
	case "state":
		return "state", true
	case "version":
		return "version", true
	case "lastmodified":
		return "lastModified", true
	case "content":
		return "content", true
	}
	return "", false
}

// canonicalField returns the canonical name of a field: a node field in its
// canonical spelling, or a content property as content.a.b. A content
// property must be written with its content. prefix: a bare name that is not
// a node field is unknown, not read from content, so a misspelt field is an
// error instead of a query that silently matches nothing. ok is false for an
// unknown field and for a content property path with an empty segment.
func canonicalField(name string) (field string, ok bool) {
	lower := FoldName(name)
	if f, ok := nodeField(lower); ok {
		return f, true
	}
	if !strings.HasPrefix(lower, "content.") {
		return "", false
	}
	prop := name[len("content."):]
	for seg := range strings.SplitSeq(prop, ".") {
		if seg == "" {
			return "", false
		}
	}
	return "content." + prop, true
}
