package sqlgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/mesh"
)

// Select is one SQL statement and its arguments.
type Select struct {
	SQL  string
	Args []any

	// Exact reports that the statement's rows are the answer: its WHERE
	// selects exactly the rows q.Matches selects, and its ORDER BY and LIMIT
	// order and cut them as q.Less and q.Limit do. When false the rows are a
	// superset in no particular order: filter them with q.Matches, sort them
	// with q.Less and apply the limit in Go.
	Exact bool

	// Residual names, when Exact is false, each condition or ordering left
	// to Go and why, for logs.
	Residual []string
}

// MaxSchemaNameLen is PostgreSQL's identifier limit in bytes. A longer name
// would be silently truncated and could name another schema.
const MaxSchemaNameLen = 63

// maxExprDepth bounds how deeply filter expressions may nest.
const maxExprDepth = 256

// Tables returns the tables Build reads: mesh.NodesTable and the satellite
// tables, all of one shape.
func Tables() []string {
	return append([]string{mesh.NodesTable}, mesh.SatelliteTables()...)
}

// InputError reports input Build refuses.
type InputError struct {
	Input  string // "query", "table" or "schema"
	Value  string // the offending value, as given ("" for a nil query)
	Reason string
}

func (e *InputError) Error() string {
	v := e.Value
	if len(v) > 64 {
		v = v[:64] + "..."
	}
	return fmt.Sprintf("sqlgen: %s %q: %s", e.Input, v, e.Reason)
}

// Build returns the statement that reads the nodes q selects from table in
// the given schemas: a plain SELECT for one schema, and for several one
// UNION ALL of identical branches wrapped as
// SELECT * FROM (...) AS combined ORDER BY ... LIMIT ... . Rows have the
// columns of Columns, in that order; read them with ScanNode.
//
// Identifiers are quoted and every value is a parameter. Whatever SQL
// cannot reproduce of mesh's matching is left out, so the statement returns
// a superset and Exact is false; see Select.
//
// Build fails with an *InputError for a nil query, a table not in Tables,
// no schemas, a schema name that is empty, repeated, longer than
// MaxSchemaNameLen bytes, not UTF-8 or containing NUL, or a query value or
// field that is not UTF-8 or contains NUL.
func Build(q *mesh.Query, table string, schemas []string) (Select, error) {
	return BuildTables(q, []string{table}, schemas)
}

// BuildTables is Build over several tables of each schema: one branch per
// schema and table, all in one statement.
func BuildTables(q *mesh.Query, tables, schemas []string) (Select, error) {
	if q == nil {
		return Select{}, &InputError{Input: "query", Reason: "the query is nil"}
	}
	if len(tables) == 0 {
		return Select{}, &InputError{Input: "table", Reason: "no table to read"}
	}
	for i, table := range tables {
		if !slices.Contains(Tables(), table) {
			return Select{}, &InputError{Input: "table", Value: table,
				Reason: "not a node table; want one of " + strings.Join(Tables(), ", ")}
		}
		if slices.Contains(tables[:i], table) {
			return Select{}, &InputError{Input: "table", Value: table, Reason: "listed twice"}
		}
	}
	if err := checkSchemas(schemas); err != nil {
		return Select{}, err
	}
	if err := checkQuery(q); err != nil {
		return Select{}, err
	}

	// The WHERE for rows with keys, then for rows without (see keys.go);
	// one branch per table when no condition has a key.
	b := &builder{mode: keysOnly}
	keyed := allOf(b.anchor(q), b.filter(q))
	split := b.usedKey
	b.mode, b.residuals = spelledOnly, nil
	where := allOf(b.anchor(q), b.filter(q))
	exact := where.exact && keyed.exact
	if len(q.Text) > 0 {
		exact = false
		b.residuals = append(b.residuals, "free text: mesh looks it up in lower-cased name, path, node type and content scalars")
	}
	var tail string
	if exact {
		order, ok := b.order(q)
		if ok {
			tail = " ORDER BY " + order
			if q.Limit > 0 {
				tail += " LIMIT " + b.param(int64(q.Limit), "int8")
			}
		} else {
			exact = false
			b.residuals = append(b.residuals, "sort:"+q.Sort.Field+": mesh orders its values by each value's own typing")
		}
	}

	var sql strings.Builder
	branch := func(schema, table string) {
		from := "SELECT " + Columns + " FROM " + pgx.Identifier{schema, table}.Sanitize() + " AS n"
		if split {
			sql.WriteString(from + " WHERE n.path_key IS NOT NULL AND " + keyed.sql)
			sql.WriteString(" UNION ALL " + from + " WHERE n.path_key IS NULL AND " + where.sql)
			return
		}
		sql.WriteString(from)
		if where.sql != "TRUE" {
			sql.WriteString(" WHERE " + where.sql)
		}
	}
	if len(schemas) == 1 && len(tables) == 1 && !split {
		branch(schemas[0], tables[0])
	} else {
		sql.WriteString("SELECT * FROM (")
		first := true
		for _, s := range schemas {
			for _, t := range tables {
				if !first {
					sql.WriteString(" UNION ALL ")
				}
				first = false
				branch(s, t)
			}
		}
		sql.WriteString(") AS combined")
	}
	sql.WriteString(tail)

	sel := Select{Exact: exact}
	sel.SQL, sel.Args = b.number(sql.String())
	if !exact {
		sel.Residual = b.residuals
	}
	return sel, nil
}

// builder collects the arguments of one statement.
type builder struct {
	args      []any
	residuals []string
	mode      keyMode // which form keyed conditions take
	usedKey   bool    // a condition on a key column was written

	yearZero, year10000 string // parameters of timeRange, once allocated
}

// paramMark brackets a parameter's index while the statement is assembled.
// Identifiers never hold NUL (Build refuses it), nor do the SQL fragments.
const paramMark = "\x00"

// param returns a reference to a new argument v, cast to typ. References
// are numbered $1, $2, ... by number, in order of first use, so arguments
// of conditions that were folded away are not sent.
func (b *builder) param(v any, typ string) string {
	b.args = append(b.args, v)
	return paramMark + strconv.Itoa(len(b.args)-1) + paramMark + "::" + typ
}

// number replaces the parameter marks of sql by $n and returns the
// arguments those refer to, in order.
func (b *builder) number(sql string) (string, []any) {
	var out strings.Builder
	var args []any
	seen := map[int]int{} // index into b.args -> $n
	for {
		i := strings.Index(sql, paramMark)
		if i < 0 {
			out.WriteString(sql)
			return out.String(), args
		}
		end := strings.Index(sql[i+1:], paramMark)
		idx, err := strconv.Atoi(sql[i+1 : i+1+max(end, 0)])
		if end < 0 || err != nil || idx < 0 || idx >= len(b.args) {
			// Not a mark param wrote; unreachable, as identifiers hold no NUL.
			out.WriteString(sql)
			return out.String(), args
		}
		j := i + 1 + end
		n, ok := seen[idx]
		if !ok {
			args = append(args, b.args[idx])
			n = len(args)
			seen[idx] = n
		}
		out.WriteString(sql[:i] + "$" + strconv.Itoa(n))
		sql = sql[j+1:]
	}
}

func (b *builder) residual(c mesh.Cond, why string) {
	b.residuals = append(b.residuals, c.String()+": "+why)
}

func (b *builder) filter(q *mesh.Query) pred {
	if q.Filter == nil {
		return predTrue
	}
	return b.expr(q.Filter, 0)
}

func checkSchemas(schemas []string) error {
	if len(schemas) == 0 {
		return &InputError{Input: "schema", Reason: "no schema to read; a query reads at least one"}
	}
	for i, s := range schemas {
		bad := func(reason string) error { return &InputError{Input: "schema", Value: s, Reason: reason} }
		switch {
		case s == "":
			return bad("the name is empty")
		case !utf8.ValidString(s):
			return bad("the name is not valid UTF-8")
		case strings.ContainsRune(s, 0):
			return bad("the name contains a NUL byte")
		case len(s) > MaxSchemaNameLen:
			return bad(fmt.Sprintf("the name is %d bytes; PostgreSQL would truncate it to %d", len(s), MaxSchemaNameLen))
		case slices.Contains(schemas[:i], s):
			return bad("the schema is listed twice; its rows would be read twice")
		}
	}
	return nil
}

// checkQuery refuses values PostgreSQL cannot receive as text: NUL bytes
// and invalid UTF-8.
func checkQuery(q *mesh.Query) error {
	check := func(what, v string) error {
		switch {
		case !utf8.ValidString(v):
			return &InputError{Input: "query", Value: v, Reason: what + " is not valid UTF-8"}
		case strings.ContainsRune(v, 0):
			return &InputError{Input: "query", Value: v, Reason: what + " contains a NUL byte"}
		}
		return nil
	}
	if err := check("the path", q.Path); err != nil {
		return err
	}
	for _, p := range q.Paths {
		if err := check("a listed path", p); err != nil {
			return err
		}
	}
	if err := check("the sort field", q.Sort.Field); err != nil {
		return err
	}
	var walk func(e mesh.Expr, depth int) error
	walk = func(e mesh.Expr, depth int) error {
		if depth > maxExprDepth {
			return &InputError{Input: "query", Value: q.String(),
				Reason: fmt.Sprintf("the filter nests deeper than %d levels", maxExprDepth)}
		}
		var terms []mesh.Expr
		switch e := e.(type) {
		case mesh.And:
			terms = e
		case mesh.Or:
			terms = e
		case mesh.Cond:
			if err := check("the field "+strconv.Quote(e.Field), e.Field); err != nil {
				return err
			}
			for _, v := range e.Values {
				if err := check("a value of "+strconv.Quote(e.Field), v); err != nil {
					return err
				}
			}
		}
		for _, t := range terms {
			if err := walk(t, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(q.Filter, 0)
}
