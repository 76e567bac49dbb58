package sqlgen

import "strings"

// contentHas returns "some value of content property prop satisfies inner".
//
// mesh collects the values of content.a.b by walking the JSON: at an object
// it takes key a if present, otherwise every key equal to a under Unicode
// case folding; arrays are transparent at every step and flattened at the
// end; the values are the scalars reached (strings, numbers, booleans). A
// recursive walk in SQL does the same, so the set of values is exact, and
// the condition on each value is inner applied to its text. With no value
// the EXISTS is false, which is how a negation comes to hold for a node
// without the property.
func (b *builder) contentHas(prop string, inner func(h string) pred) pred {
	segs := strings.Split(prop, ".")
	keys := make([]string, len(segs))
	for i, s := range segs {
		if tooLong(s) {
			b.residuals = append(b.residuals, "content."+prop+": "+tooHardWhy)
			return superset
		}
		keys[i] = equalFoldPattern(s)
	}
	segsP, keysP := b.param(segs, "text[]"), b.param(keys, "text[]")
	leaf := inner("(walk.v #>> '{}')")
	if leaf.sql == "FALSE" {
		return predFalse
	}
	// One step from a value: each element of an array (same property
	// index), or the matching members of an object (next index). ROWS FROM
	// runs both functions side by side; only one of them yields rows.
	// UNION, not UNION ALL: the walk only answers "is there a value", and a
	// duplicate cannot change that.
	sql := "EXISTS (WITH RECURSIVE walk(v, i) AS (" +
		"SELECT n.content, 1 " +
		"UNION SELECT coalesce(x.elem, walk.v -> x.key), walk.i + CASE WHEN x.elem IS NULL THEN 1 ELSE 0 END " +
		"FROM walk CROSS JOIN LATERAL ROWS FROM (" +
		"jsonb_array_elements(CASE WHEN jsonb_typeof(walk.v) = 'array' THEN walk.v END), " +
		"jsonb_object_keys(CASE WHEN walk.i <= cardinality(" + segsP + ") AND jsonb_typeof(walk.v) = 'object' THEN walk.v END)" +
		") AS x(elem, key) " +
		"WHERE x.elem IS NOT NULL OR CASE WHEN walk.v ? (" + segsP + ")[walk.i] THEN x.key = (" + segsP + ")[walk.i] " +
		"ELSE x.key ~ (" + keysP + ")[walk.i] END) " +
		"SELECT 1 FROM walk WHERE walk.i > cardinality(" + segsP + ") " +
		"AND jsonb_typeof(walk.v) IN ('string', 'number', 'boolean')"
	if leaf.sql != "TRUE" {
		sql += " AND (" + leaf.sql + ")"
	}
	return pred{sql: sql + ")", exact: leaf.exact}
}
