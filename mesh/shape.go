package mesh

import "strings"

// DescribeShape returns the shape of q as the allow list and the fan-out log
// name it: "nodeType:{t} path:{p} scope:{s}", where t is the node type when
// the filter pins exactly one (else *), p is the anchor path, or the path list
// joined with |, or - when there is none, and s is the scope word.
func DescribeShape(q *Query) string {
	if q == nil {
		q = &Query{}
	}
	t, ok := singleNodeType(q.Filter)
	if !ok {
		t = "*"
	}
	p := q.Path
	if len(q.Paths) > 0 {
		p = strings.Join(q.Paths, "|")
	}
	if p == "" {
		p = "-"
	}
	return "nodeType:" + t + " path:" + p + " scope:" + q.Scope.String()
}

// singleNodeType returns the node type of the one nodeType equality in the
// filter's top-level AND, if there is exactly one.
func singleNodeType(e Expr) (string, bool) {
	terms := []Expr{e}
	if a, ok := e.(And); ok {
		terms = a
	}
	found, n := "", 0
	for _, t := range terms {
		if c, ok := t.(Cond); ok && c.Field == "nodeType" && c.Op == OpEq && len(c.Values) == 1 {
			found, n = c.Values[0], n+1
		}
	}
	return found, n == 1
}
