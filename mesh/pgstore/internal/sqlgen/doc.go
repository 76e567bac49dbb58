// Package sqlgen turns a mesh query into one SQL statement for pgstore: a
// SELECT against one partition schema (a pinned read) or a single UNION ALL
// over several (a fan-out), with every value a parameter and every
// identifier quoted.
//
// The statement reproduces (*mesh.Query).Matches and Less where SQL can do
// so exactly, on every server whatever its locale:
//
//   - the anchor (path or path list under every scope, globs included),
//   - conditions on id, name, namespace, path, nodeType and mainNode with
//     string and glob values, and their negations,
//   - every condition on state, version and lastModified,
//   - conditions on content properties with string and glob values (arrays,
//     case-insensitive keys and absent properties as mesh treats them),
//   - sorting by path, version, state and lastModified, and the limit.
//
// Case-insensitive matching of the node fields (namespace, path, id, node
// type, main node, name) goes through folded key columns: each holds its
// field folded with Fold, mesh's own folding, computed in Go by the writer
// (KeysOf), collated "C" and indexed by a B-tree. Equality and in-lists
// become = and = ANY on the key, a glob's literal prefix a byte range, and
// a regular expression on the key remains only for what follows a glob's
// first star (or for an anchor glob other than exact or children). Rows
// whose keys are not filled yet are read by a second branch of the same
// statement that matches them with regular expressions spelling out each
// character's case variants as Go defines them — never lower() or ILIKE,
// whose results follow the server's locale. Content properties are matched
// with those spelled-out patterns too.
//
// The rest stays in Go: free text, comparisons of text fields with number
// or time values (whether a row's value is a number or a time decides how
// it compares), ordering comparisons on text fields, the raw content field,
// and sorting by text fields or content. Then the statement returns a
// superset, unordered and unlimited, and Select.Exact is false.
//
// A glob with more than 16 stars is matched in Go too: each star is work the
// regular-expression engine repeats at every position, and the database is
// shared.
//
// Two things the caller should know. A statement with keyed conditions
// reads each table in two branches (rows with keys, rows without), so even
// one table is a UNION ALL. And a condition on a content property carries a recursive walk
// whose planner estimate (about a thousand per row) exceeds jit_above_cost
// on any table of more than a hundred rows or so: with PostgreSQL's default
// jit = on, compiling it takes most of a second while running it takes
// milliseconds, so run these statements on connections with jit = off.
//
// The generated SQL assumes rows as pgstore writes them (an id is one path
// segment; state holds a named mesh.State); ScanNode refuses others.
package sqlgen
