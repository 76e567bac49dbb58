package mesh

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on query input.
const (
	MaxQueryLen   = 4096 // bytes
	MaxQueryDepth = 64   // nested parentheses
)

// Parse parses a query string. The grammar is GitHub-search style:
//
//	nodeType:Article name:*report*      whitespace is AND (AND may be written)
//	nodeType:Article OR nodeType:Page   OR (case-insensitive), ( ) to group
//	-state:deleted                      negation
//	version:>3 version:<=7              comparison: > >= < <=
//	nodeType:A|B  nodeType:(A OR B)     one of
//	name:"annual report"  'a b'         quoted values; \" escapes the quote
//	budget "annual report"              free text: every term must occur
//	[acme/a, acme/b]  path:a|b          an explicit path list
//	path:acme/Docs scope:descendants    anchor; scope exact (default), children,
//	                                    descendants, subtree, ancestors, hierarchy
//	namespace:acme/Docs                 anchor with scope children (subtree
//	                                    becomes descendants); namespace:A|B filters
//	sort:lastModified-desc limit:20     order (then path) and size; limit:all
//	select:path,name partitions:all     projection; explicit mesh-wide read
//	content.title:Foo                   a content property, always written
//	sort:content.createdAt-desc         with content. (filter, sort:, select:)
//
// A * in a value makes it a glob. Values and field names compare
// case-insensitively. The node fields are id, namespace, path, name,
// nodeType, mainNode, state, version and lastModified; a content property is
// named content.a.b, in filters, sort: and select: alike. Any other field
// name is an error (*ParseError with Field and Suggestion set: nodeTyp
// suggests nodeType, createdAt suggests content.createdAt), never a
// condition that silently matches nothing. path:, scope:, sort:, limit:, select: and
// partitions: apply to the whole query and may not appear inside OR or be
// negated. Errors are *ParseError values naming the offset of the problem.
func Parse(s string) (*Query, error) {
	if len(s) > MaxQueryLen {
		return nil, &ParseError{Query: s, Offset: MaxQueryLen,
			Msg: fmt.Sprintf("query is %d bytes; the limit is %d", len(s), MaxQueryLen)}
	}
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return nil, &ParseError{Query: s, Offset: i, Msg: "query is not valid UTF-8"}
			}
		}
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return nil, &ParseError{Query: s, Offset: i, Msg: fmt.Sprintf("control character %U is not allowed", r)}
		}
	}
	p := &parser{src: s}
	branches, err := p.parseOr(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(s) {
		return nil, p.errAt(p.pos, "unmatched ); remove it or add a ( before it")
	}
	b := &builder{src: s, filters: make([]Expr, 0, 8)}
	if err := b.top(branches); err != nil {
		return nil, err
	}
	return b.finish(), nil
}

type itemKind uint8

const (
	itemCond     itemKind = iota // a filter condition
	itemText                     // a free-text term
	itemReserved                 // path:, namespace:, scope:, ...
	itemPaths                    // [a, b]
	itemGroup                    // ( ... )
)

// item is one term of the query as written, before the reserved qualifiers
// are applied.
type item struct {
	kind   itemKind
	neg    bool      // written with a leading -
	off    int       // where the term starts
	valOff int       // where its value starts
	name   string    // canonical field, lower-case reserved qualifier, or the free text
	spec   valueSpec // the value of a field or qualifier; the entries of a path list
	group  [][]item  // itemGroup: OR branches of AND terms
}

// valueSpec is the value part of field:value as written.
type valueSpec struct {
	op     Op // OpEq (one value), OpIn (a list) or a comparison
	values []string
}

type parser struct {
	src string
	pos int
}

func (p *parser) errAt(off int, format string, args ...any) *ParseError {
	return &ParseError{Query: p.src, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) eof() bool { return p.pos >= len(p.src) }

// peekRune returns the rune at the cursor, or -1 at the end.
func (p *parser) peekRune() (rune, int) {
	if p.eof() {
		return -1, 0
	}
	return utf8.DecodeRuneInString(p.src[p.pos:])
}

func (p *parser) atSpace() bool {
	r, _ := p.peekRune()
	return r >= 0 && unicode.IsSpace(r)
}

func (p *parser) skipSpace() {
	for p.atSpace() {
		_, n := p.peekRune()
		p.pos += n
	}
}

// atBoundary reports whether a term may end at the cursor.
func (p *parser) atBoundary() bool {
	return p.eof() || p.atSpace() || p.src[p.pos] == '(' || p.src[p.pos] == ')'
}

// keywordAt reports whether the word kw (OR, AND) stands at the cursor.
func (p *parser) keywordAt(kw string) bool {
	end := p.pos + len(kw)
	if end > len(p.src) || !EqualNames(p.src[p.pos:end], kw) {
		return false
	}
	save := p.pos
	p.pos = end
	ok := p.atBoundary()
	p.pos = save
	return ok
}

// parseOr parses branches separated by OR, up to a ) or the end.
func (p *parser) parseOr(depth int) ([][]item, error) {
	var branches [][]item
	lastOR := -1
	for {
		branch, err := p.parseAnd(depth)
		if err != nil {
			return nil, err
		}
		if len(branch) == 0 {
			if lastOR >= 0 {
				return nil, p.errAt(lastOR, "OR needs a term after it")
			}
			if p.keywordAt("or") {
				return nil, p.errAt(p.pos, "OR needs a term before it")
			}
			return nil, nil
		}
		branches = append(branches, branch)
		p.skipSpace()
		if !p.keywordAt("or") {
			return branches, nil
		}
		lastOR = p.pos
		p.pos += len("or")
	}
}

// parseAnd parses terms up to an OR, a ) or the end.
func (p *parser) parseAnd(depth int) ([]item, error) {
	items := make([]item, 0, 8)
	for {
		p.skipSpace()
		if p.eof() || p.src[p.pos] == ')' || p.keywordAt("or") {
			return items, nil
		}
		if p.keywordAt("and") {
			andOff := p.pos
			if len(items) == 0 {
				return nil, p.errAt(andOff, "AND needs a term before it")
			}
			p.pos += len("and")
			p.skipSpace()
			if p.eof() || p.src[p.pos] == ')' || p.keywordAt("or") || p.keywordAt("and") {
				return nil, p.errAt(andOff, "AND needs a term after it")
			}
			continue
		}
		it, err := p.parseTerm(depth)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
}

func (p *parser) parseTerm(depth int) (item, error) {
	start := p.pos
	switch c := p.src[p.pos]; c {
	case '(':
		if depth >= MaxQueryDepth {
			return item{}, p.errAt(start, "parentheses are nested deeper than %d levels", MaxQueryDepth)
		}
		p.pos++
		branches, err := p.parseOr(depth + 1)
		if err != nil {
			return item{}, err
		}
		p.skipSpace()
		if p.eof() {
			return item{}, p.errAt(start, "unclosed parenthesis; add a )")
		}
		if len(branches) == 0 {
			return item{}, p.errAt(start, "empty parentheses")
		}
		p.pos++ // the )
		return item{kind: itemGroup, off: start, group: branches}, nil
	case '[':
		paths, err := p.parsePathList()
		if err != nil {
			return item{}, err
		}
		return item{kind: itemPaths, off: start, spec: valueSpec{op: OpIn, values: paths}}, nil
	case '"', '\'':
		text, err := p.quoted()
		if err != nil {
			return item{}, err
		}
		if !p.atBoundary() {
			return item{}, p.errAt(p.pos, "unexpected character after closing quote; add a space")
		}
		if text == "" {
			return item{}, p.errAt(start, "empty quoted text")
		}
		return item{kind: itemText, off: start, name: text}, nil
	case '-':
		p.pos++
		name, ok := p.fieldName()
		if !ok {
			if err := p.unnamedProperty(); err != nil {
				return item{}, err
			}
			return item{}, p.errAt(start, "- must be followed by field:value, as in -state:deleted")
		}
		return p.fieldTerm(start, name, true)
	}
	if name, ok := p.fieldName(); ok {
		return p.fieldTerm(start, name, false)
	}
	if err := p.unnamedProperty(); err != nil {
		return item{}, err
	}
	for !p.atBoundary() {
		_, n := p.peekRune()
		p.pos += n
	}
	return item{kind: itemText, off: start, name: p.src[start:p.pos]}, nil
}

// fieldName consumes a field name followed by a colon, if one is at the cursor.
func (p *parser) fieldName() (string, bool) {
	end := p.pos
	for end < len(p.src) && isFieldChar(p.src[end], end == p.pos) {
		end++
	}
	if end == p.pos || end >= len(p.src) || p.src[end] != ':' {
		return "", false
	}
	name := p.src[p.pos:end]
	p.pos = end + 1
	return name, true
}

// unnamedProperty reports content.x:value at the cursor whose property
// name has a character a field name cannot hold: read as free text, it
// would silently match nothing.
func (p *parser) unnamedProperty() error {
	rest := p.src[p.pos:]
	if len(rest) < len("content.") || !EqualNames(rest[:len("content.")], "content.") {
		return nil
	}
	bad := -1
	for i, r := range rest[len("content."):] {
		switch {
		case r == ':':
			if bad < 0 {
				return nil
			}
			return p.errAt(p.pos+len("content.")+bad, "a content property name holds only ASCII letters, digits and _ $ - . ; "+
				"quote the whole term to search for it as text")
		case unicode.IsSpace(r) || r == '(' || r == ')':
			return nil // the word ends before any colon: free text
		case bad < 0 && (r >= utf8.RuneSelf || !isFieldChar(byte(r), false)):
			bad = i
		}
	}
	return nil
}

func isFieldChar(c byte, first bool) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '_', c == '$':
		return true
	case '0' <= c && c <= '9', c == '.', c == '-':
		return !first
	}
	return false
}

func (p *parser) fieldTerm(start int, name string, neg bool) (item, error) {
	lower := FoldName(name)
	valOff := p.pos
	spec, err := p.parseValueSpec()
	if err != nil {
		return item{}, err
	}
	switch lower {
	case "path", "namespace", "scope", "sort", "limit", "select", "partitions":
		return item{kind: itemReserved, off: start, valOff: valOff, name: lower, neg: neg, spec: spec}, nil
	case "source", "context", "is":
		return item{}, p.errAt(start, "%s: is not supported", lower)
	case "content":
		return item{}, p.errAt(start, "content: needs a property, as in content.title:value")
	}
	field, ok := canonicalField(name)
	if !ok {
		return item{}, fieldError(p.src, start, name, true)
	}
	return item{kind: itemCond, off: start, valOff: valOff, name: field, neg: neg, spec: spec}, nil
}

// condOf builds the condition field:spec, negated if neg.
func condOf(field string, spec valueSpec, neg bool) Cond {
	op := spec.op
	if op == OpEq && strings.Contains(spec.values[0], "*") {
		op = OpLike
	}
	if neg {
		switch op {
		case OpEq:
			op = OpNe
		case OpLike:
			op = OpNotLike
		case OpIn:
			op = OpNotIn
		case OpGt:
			op = OpLe
		case OpGe:
			op = OpLt
		case OpLt:
			op = OpGe
		case OpLe:
			op = OpGt
		}
	}
	return Cond{Field: field, Op: op, Values: spec.values}
}

// parseValueSpec parses what follows field: .
func (p *parser) parseValueSpec() (valueSpec, error) {
	if p.eof() || p.atSpace() || p.src[p.pos] == ')' {
		return valueSpec{op: OpEq, values: []string{""}}, nil
	}
	switch p.src[p.pos] {
	case '(':
		return p.valueList()
	case '>', '<':
		return p.comparison()
	}
	if p.src[p.pos] == '|' {
		return valueSpec{}, p.errAt(p.pos, "empty value in a | list")
	}
	var values []string
	for {
		v, err := p.value("|()")
		if err != nil {
			return valueSpec{}, err
		}
		values = append(values, v)
		if p.eof() || p.src[p.pos] != '|' {
			break
		}
		p.pos++
		if p.eof() || p.atSpace() || strings.IndexByte("|()", p.src[p.pos]) >= 0 {
			return valueSpec{}, p.errAt(p.pos, "empty value in a | list")
		}
	}
	if !p.eof() && p.src[p.pos] == '(' {
		return valueSpec{}, p.errAt(p.pos, "unexpected ( after a value; quote a value that contains parentheses")
	}
	if !p.atBoundary() {
		return valueSpec{}, p.errAt(p.pos, "unexpected character after closing quote; add a space")
	}
	if len(values) == 1 {
		return valueSpec{op: OpEq, values: values}, nil
	}
	return valueSpec{op: OpIn, values: values}, nil
}

// value parses one quoted value, or a bare one ending at white space or any
// byte in stops. A bare value may be empty.
func (p *parser) value(stops string) (string, error) {
	if !p.eof() && (p.src[p.pos] == '"' || p.src[p.pos] == '\'') {
		return p.quoted()
	}
	start := p.pos
	for !p.eof() && !p.atSpace() && strings.IndexByte(stops, p.src[p.pos]) < 0 {
		_, n := p.peekRune()
		p.pos += n
	}
	return p.src[start:p.pos], nil
}

// quoted parses "..." or '...'; a backslash escapes the quote and itself.
func (p *parser) quoted() (string, error) {
	start := p.pos
	q := p.src[p.pos]
	p.pos++
	var b strings.Builder
	for !p.eof() {
		c := p.src[p.pos]
		switch {
		case c == '\\' && p.pos+1 < len(p.src) && (p.src[p.pos+1] == q || p.src[p.pos+1] == '\\'):
			b.WriteByte(p.src[p.pos+1])
			p.pos += 2
		case c == q:
			p.pos++
			return b.String(), nil
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", p.errAt(start, "unclosed quote; add a closing %c", q)
}

func (p *parser) comparison() (valueSpec, error) {
	opOff := p.pos
	var op Op
	switch p.src[p.pos] {
	case '>':
		op = OpGt
	case '<':
		op = OpLt
	}
	p.pos++
	if !p.eof() && p.src[p.pos] == '=' {
		op++ // OpGe follows OpGt, OpLe follows OpLt
		p.pos++
	}
	valOff := p.pos
	quoted := !p.eof() && (p.src[p.pos] == '"' || p.src[p.pos] == '\'')
	v, err := p.value("|()")
	if err != nil {
		return valueSpec{}, err
	}
	if v == "" && !quoted {
		return valueSpec{}, p.errAt(opOff, "missing value after %s", p.src[opOff:valOff])
	}
	if !p.eof() && p.src[p.pos] == '|' {
		return valueSpec{}, p.errAt(p.pos, "a comparison takes one value")
	}
	if !p.eof() && p.src[p.pos] == '(' {
		return valueSpec{}, p.errAt(p.pos, "unexpected ( after a value; quote a value that contains parentheses")
	}
	if !p.atBoundary() {
		return valueSpec{}, p.errAt(p.pos, "unexpected character after closing quote; add a space")
	}
	return valueSpec{op: op, values: []string{v}}, nil
}

// valueList parses field:(a OR b OR c); | also separates values.
func (p *parser) valueList() (valueSpec, error) {
	start := p.pos
	p.pos++
	var values []string
	for {
		p.skipSpace()
		if p.eof() {
			return valueSpec{}, p.errAt(start, "unclosed value list; add a )")
		}
		if p.src[p.pos] == ')' {
			if len(values) == 0 {
				return valueSpec{}, p.errAt(start, "empty value list")
			}
			p.pos++
			break
		}
		if len(values) > 0 {
			sepOff := p.pos
			switch {
			case p.keywordAt("or"):
				p.pos += len("or")
			case p.src[p.pos] == '|':
				p.pos++
			default:
				return valueSpec{}, p.errAt(p.pos, "separate the values in a list with OR or |")
			}
			p.skipSpace()
			if p.eof() {
				return valueSpec{}, p.errAt(start, "unclosed value list; add a )")
			}
			if p.src[p.pos] == ')' {
				return valueSpec{}, p.errAt(sepOff, "a value list separator needs a value after it")
			}
		}
		if p.src[p.pos] == '(' {
			return valueSpec{}, p.errAt(p.pos, "a value list cannot contain parentheses")
		}
		if p.keywordAt("or") || p.src[p.pos] == '|' {
			return valueSpec{}, p.errAt(p.pos, "empty value in a list")
		}
		v, err := p.value("|()")
		if err != nil {
			return valueSpec{}, err
		}
		values = append(values, v)
	}
	if !p.atBoundary() {
		return valueSpec{}, p.errAt(p.pos, "unexpected character after a value list; add a space")
	}
	if len(values) == 1 {
		return valueSpec{op: OpEq, values: values}, nil
	}
	return valueSpec{op: OpIn, values: values}, nil
}

// parsePathList parses [a, b, c].
func (p *parser) parsePathList() ([]string, error) {
	start := p.pos
	p.pos++
	var paths []string
	for {
		p.skipSpace()
		if p.eof() {
			return nil, p.errAt(start, "unclosed path list; add a ]")
		}
		if p.src[p.pos] == ']' {
			if len(paths) == 0 {
				return nil, p.errAt(start, "empty path list")
			}
			p.pos++
			break
		}
		if len(paths) > 0 {
			if p.src[p.pos] != ',' {
				return nil, p.errAt(p.pos, "separate the paths in a list with commas")
			}
			p.pos++
			p.skipSpace()
		}
		entryOff := p.pos
		v, err := p.value(",[]")
		if err != nil {
			return nil, err
		}
		if v == "" {
			return nil, p.errAt(entryOff, "empty entry in path list")
		}
		var pe *PathError
		if err := ValidatePath(v); errors.As(err, &pe) {
			return nil, p.errAt(entryOff, "invalid path in list: %s", pe.Reason)
		}
		paths = append(paths, v)
	}
	if !p.atBoundary() {
		return nil, p.errAt(p.pos, "unexpected character after a path list; add a space")
	}
	return paths, nil
}

// builder applies parsed items to a Query.
type builder struct {
	src         string
	q           Query
	filters     []Expr
	seen        []string // reserved qualifiers given so far
	anchorBy    string   // qualifier that set the anchor
	byNamespace bool     // the anchor came from namespace:
}

func (b *builder) errAt(off int, format string, args ...any) *ParseError {
	return &ParseError{Query: b.src, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func (b *builder) top(branches [][]item) error {
	switch len(branches) {
	case 0:
		return nil
	case 1:
		return b.topAnd(branches[0])
	}
	or, err := b.or(branches)
	if err != nil {
		return err
	}
	b.filters = append(b.filters, or)
	return nil
}

// topAnd applies the terms of the query's outermost AND.
func (b *builder) topAnd(items []item) error {
	for _, it := range items {
		switch it.kind {
		case itemCond:
			b.filters = append(b.filters, condOf(it.name, it.spec, it.neg))
		case itemText:
			b.q.Text = append(b.q.Text, it.name)
		case itemPaths:
			if err := b.setAnchor(it.off, "path list"); err != nil {
				return err
			}
			b.q.Paths = it.spec.values
		case itemGroup:
			if err := b.top(it.group); err != nil {
				return err
			}
		case itemReserved:
			if err := b.reserved(it); err != nil {
				return err
			}
		}
	}
	return nil
}

// or builds an OR of branches. Inside OR only filter conditions may appear.
func (b *builder) or(branches [][]item) (Expr, error) {
	var terms Or
	for _, br := range branches {
		e, err := b.branch(br)
		if err != nil {
			return nil, err
		}
		if o, ok := e.(Or); ok {
			terms = append(terms, o...)
		} else {
			terms = append(terms, e)
		}
	}
	return terms, nil
}

// branch builds the AND of the terms of one OR branch.
func (b *builder) branch(items []item) (Expr, error) {
	var terms And
	for _, it := range items {
		switch it.kind {
		case itemCond:
			terms = append(terms, condOf(it.name, it.spec, it.neg))
		case itemText:
			return nil, b.errAt(it.off, "free text cannot be part of an OR; use a field such as name:%s", quoteValue("*"+it.name+"*"))
		case itemPaths:
			return nil, b.errAt(it.off, "a path list applies to the whole query and cannot be part of an OR; use namespace:A|B to filter")
		case itemReserved:
			if it.name != "namespace" {
				return nil, b.errAt(it.off, "%s: applies to the whole query and cannot be part of an OR; "+
					"put the OR in parentheses, as in (a:1 OR b:2) %s:...", it.name, it.name)
			}
			terms = append(terms, condOf("namespace", it.spec, it.neg))
		case itemGroup:
			var e Expr
			var err error
			if len(it.group) == 1 {
				e, err = b.branch(it.group[0])
			} else {
				e, err = b.or(it.group)
			}
			if err != nil {
				return nil, err
			}
			if a, ok := e.(And); ok {
				terms = append(terms, a...)
			} else {
				terms = append(terms, e)
			}
		}
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return terms, nil
}

func (b *builder) setAnchor(off int, by string) error {
	if b.anchorBy != "" {
		return b.errAt(off, "%s and %s both set where the query looks; use one", b.anchorBy, by)
	}
	b.anchorBy = by
	return nil
}

func (b *builder) reserved(it item) error {
	if it.name == "namespace" && (it.neg || it.spec.op != OpEq) {
		// A negation, list or comparison on namespace is a filter, not an anchor.
		b.filters = append(b.filters, condOf("namespace", it.spec, it.neg))
		return nil
	}
	if it.neg {
		return b.errAt(it.off, "%s: cannot be negated", it.name)
	}
	if slices.Contains(b.seen, it.name) {
		return b.errAt(it.off, "%s: is given twice", it.name)
	}
	b.seen = append(b.seen, it.name)
	spec := it.spec
	switch it.name {
	case "path":
		if err := b.setAnchor(it.off, "path:"); err != nil {
			return err
		}
		if spec.op != OpEq && spec.op != OpIn {
			return b.errAt(it.valOff, "path: takes a path or a list a|b, not a comparison")
		}
		for _, v := range spec.values {
			if v == "" && len(spec.values) > 1 {
				return b.errAt(it.valOff, "empty path in path: list")
			}
			if err := b.checkPath(it.valOff, v); err != nil {
				return err
			}
		}
		if spec.op == OpIn {
			b.q.Paths = spec.values
		} else {
			b.q.Path = spec.values[0]
		}
		return nil
	case "namespace":
		if err := b.setAnchor(it.off, "namespace:"); err != nil {
			return err
		}
		if err := b.checkPath(it.valOff, spec.values[0]); err != nil {
			return err
		}
		b.q.Path = spec.values[0]
		b.byNamespace = true
		return nil
	}
	if spec.op != OpEq {
		return b.errAt(it.valOff, "%s: takes one value", it.name)
	}
	v := spec.values[0]
	switch it.name {
	case "scope":
		s, ok := ParseScope(v)
		if !ok {
			names := scopeNames()
			return b.errAt(it.valOff, "unknown scope %q; use one of %s", v, strings.Join(names[:], ", "))
		}
		b.q.Scope = s
	case "sort":
		return b.sort(it.valOff, v)
	case "limit":
		if EqualNames(v, "all") {
			b.q.Limit = LimitAll
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return b.errAt(it.valOff, "limit must be a positive whole number or all, not %q", v)
		}
		b.q.Limit = n
	case "select":
		for f := range strings.SplitSeq(v, ",") {
			f = strings.TrimSpace(f)
			if !isFieldName(f) {
				return b.errAt(it.valOff, "select: needs a comma-separated list of field names; %q is not one", f)
			}
			field, ok := canonicalField(f)
			if !ok {
				return fieldError(b.src, it.valOff, f, false)
			}
			b.q.Select = append(b.q.Select, field)
		}
	case "partitions":
		if !EqualNames(v, "all") {
			return b.errAt(it.valOff, "partitions: takes only all (partitions:all declares a mesh-wide read)")
		}
		b.q.AllPartitions = true
	}
	return nil
}

func (b *builder) checkPath(off int, path string) error {
	if path == "" {
		return nil
	}
	var pe *PathError
	if err := ValidatePath(path); errors.As(err, &pe) {
		return b.errAt(off, "invalid path: %s", pe.Reason)
	}
	return nil
}

func (b *builder) sort(off int, v string) error {
	field, desc := v, false
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		switch FoldName(v[i+1:]) {
		case "asc":
			field = v[:i]
		case "desc":
			field, desc = v[:i], true
		}
	}
	if !isFieldName(field) {
		return b.errAt(off, "sort: takes field, field-asc or field-desc; %q is not a field name", field)
	}
	canon, ok := canonicalField(field)
	if !ok {
		return fieldError(b.src, off, field, false)
	}
	if canon == "content" {
		return b.errAt(off, "cannot sort by content; sort by a property such as content.createdAt")
	}
	if canon == "path" && !desc {
		canon = "" // path ascending is the default order
	}
	b.q.Sort = Sort{Field: canon, Desc: desc}
	return nil
}

func isFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isFieldChar(s[i], i == 0) {
			return false
		}
	}
	return true
}

func (b *builder) finish() *Query {
	q := &b.q
	if b.byNamespace {
		switch {
		case !slices.Contains(b.seen, "scope"):
			q.Scope = ScopeChildren
		case q.Scope == ScopeSubtree:
			q.Scope = ScopeDescendants // namespace:X never includes the node at X
		}
	}
	switch len(b.filters) {
	case 0:
	case 1:
		q.Filter = b.filters[0]
	default:
		q.Filter = And(b.filters)
	}
	return q
}
