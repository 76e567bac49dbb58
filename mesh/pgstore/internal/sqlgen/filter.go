package sqlgen

import (
	"strings"

	"github.com/meshrx/meshrx/mesh"
)

// The columns mesh reads each node field from. Nullable columns read as ""
// when NULL, as a scanned node's fields do; a node without a main node is
// its own main node.
func textColumn(field string) (string, bool) {
	switch field {
	case "id":
		return "n.id", true
	case "namespace":
		return "n.namespace", true
	case "path":
		return "n.path", true
	case "name":
		return "coalesce(n.name, '')", true
	case "nodeType":
		return "coalesce(n.node_type, '')", true
	case "mainNode":
		return "coalesce(nullif(n.main_node, ''), n.path)", true
	}
	return "", false
}

// numberSyntax matches every string mesh reads as a number (and a few more
// spellings is harmless: it is only used as a superset).
const numberSyntax = `^[+-]?(?:[0123456789]+(?:\.[0123456789]*)?|\.[0123456789]+)(?:[eE][+-]?[0123456789]+)?$`

// expr compiles a filter expression; depth bounds the recursion.
func (b *builder) expr(e mesh.Expr, depth int) pred {
	if depth > maxExprDepth {
		// Checked by Build before compiling; kept so recursion is bounded
		// whatever the caller does.
		return superset
	}
	switch e := e.(type) {
	case mesh.And:
		ps := make([]pred, len(e))
		for i, t := range e {
			ps[i] = b.expr(t, depth+1)
		}
		return allOf(ps...)
	case mesh.Or:
		ps := make([]pred, len(e))
		for i, t := range e {
			ps[i] = b.expr(t, depth+1)
		}
		return anyOf(ps...)
	case mesh.Cond:
		return b.cond(e)
	}
	// mesh evaluates anything else (nil, *mesh.Cond, ...) as false.
	return predFalse
}

// cond compiles one condition. Eq, In and Like all mean "some value of the
// field matches some query value" (a value with * is a glob); their
// negations hold exactly when that does not, including when the field is
// absent. Comparisons hold when some value of the field compares so with
// the first query value.
func (b *builder) cond(c mesh.Cond) pred {
	if c.Field == "state" {
		return b.stateCond(c) // every operator, negations included
	}
	switch c.Op {
	case mesh.OpEq, mesh.OpIn, mesh.OpLike:
		return b.anyMatch(c)
	case mesh.OpNe, mesh.OpNotIn, mesh.OpNotLike:
		return not(b.anyMatch(c))
	}
	op, ok := sqlOp(c.Op)
	if !ok || len(c.Values) == 0 {
		return predFalse
	}
	return b.compare(c, op)
}

func (b *builder) anyMatch(c mesh.Cond) pred {
	if len(c.Values) == 0 {
		return predFalse
	}
	if col, ok := textColumn(c.Field); ok {
		key, _ := keyColumn(c.Field)
		return b.keyedTextMatch(col, key, c)
	}
	switch c.Field {
	case "version":
		return b.versionMatch(c)
	case "lastModified":
		return b.lastModifiedMatch(c)
	case "content":
		return b.rawContent(c)
	}
	if prop, ok := strings.CutPrefix(c.Field, "content."); ok {
		return b.contentHas(prop, func(h string) pred { return b.textMatch(h, c) })
	}
	return predFalse // a field mesh never reads has no values
}

func (b *builder) compare(c mesh.Cond, op string) pred {
	if _, ok := textColumn(c.Field); ok {
		b.residual(c, "ordering of text compares Go-lower-cased strings, and numbers or times by the row's own typing")
		return superset
	}
	switch c.Field {
	case "version":
		return b.versionCompare(c, op)
	case "lastModified":
		return b.lastModifiedCompare(c, op)
	case "content":
		return b.rawContent(c)
	}
	if prop, ok := strings.CutPrefix(c.Field, "content."); ok {
		b.residual(c, "ordering of content values depends on each value's own typing")
		return b.contentHas(prop, func(string) pred { return superset })
	}
	return predFalse
}

// textMatch is "some query value matches h", h being a text expression
// that mesh types per row. A glob, or a value that is neither a number nor
// a time, compares as a lower-cased string whatever h holds, which a
// spelled-out pattern reproduces. A number or time value compares by value
// with rows that read as one, which SQL cannot tell apart exactly; those
// values only narrow the rows to a superset.
func (b *builder) textMatch(h string, c mesh.Cond) pred {
	return b.keyedTextMatch(h, "", c)
}

// keyedTextMatch is textMatch on a node field whose folded key column is
// key (none when ""): the string and glob values become conditions on the
// key, with the spelled-out pattern on h kept only for rows whose key is not
// filled yet.
func (b *builder) keyedTextMatch(h, key string, c mesh.Cond) pred {
	var k keyed
	var alts []string
	var parts []pred
	numbers, times, long := false, false, false
	for _, w := range c.Values {
		var pat strings.Builder
		switch {
		case tooHard(w):
			long = true
			continue
		case strings.Contains(w, "*"):
			lowerPattern(&pat, w, true)
		case isNumber(w):
			numbers = true
			continue
		case isTime(w):
			times = true
			continue
		default:
			lowerPattern(&pat, w, false)
		}
		alts = append(alts, pat.String())
		k.addValue(w)
	}
	if re := fullMatch(alts); len(re) > maxPatternBytes {
		long = true
		if key != "" {
			parts = append(parts, b.keyedOr(func() string { return b.keyPred(key, k) }, func() pred { return superset }))
		}
	} else if re != "" {
		if key != "" {
			parts = append(parts, b.keyedOr(func() string { return b.keyPred(key, k) },
				func() pred { return exactly(h + " ~ " + b.param(re, "text")) }))
		} else {
			parts = append(parts, exactly(h+" ~ "+b.param(re, "text")))
		}
	}
	if long {
		b.residual(c, tooHardWhy)
		parts = append(parts, superset)
	}
	if numbers {
		// Equal to a number means reading as an equal number.
		b.residual(c, "a number equals rows whose text reads as the same number")
		parts = append(parts, pred{sql: h + " ~ " + b.param(numberSyntax, "text")})
	}
	if times {
		// Equal to a time means reading as the same instant, or being the
		// same string; either way the text holds a '-'.
		b.residual(c, "a time equals rows whose text reads as the same instant")
		parts = append(parts, pred{sql: "strpos(" + h + ", '-') > 0"})
	}
	return anyOf(parts...)
}

func isNumber(s string) bool { _, ok := parseNumber(s); return ok }

func isTime(s string) bool {
	if isNumber(s) {
		return false
	}
	_, ok := parseTime(s)
	return ok
}

// rawContent handles the field "content" itself, which mesh compares as
// the node's JSON text. The JSON PostgreSQL returns is not the JSON that was
// stored (jsonb normalises it), so only "has content" is pushed down.
func (b *builder) rawContent(c mesh.Cond) pred {
	b.residual(c, "the content field compares the JSON text, which jsonb normalises")
	return pred{sql: "n.content IS NOT NULL"}
}

// sqlOp returns the SQL operator of a comparison; ok is false for any
// other operator.
func sqlOp(op mesh.Op) (string, bool) {
	switch op {
	case mesh.OpGt:
		return ">", true
	case mesh.OpGe:
		return ">=", true
	case mesh.OpLt:
		return "<", true
	case mesh.OpLe:
		return "<=", true
	}
	return "", false
}
