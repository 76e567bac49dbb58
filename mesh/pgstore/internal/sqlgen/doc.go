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
// Case-insensitive comparisons use regular expressions that spell out each
// character's case variants as Go defines them, not lower() or ILIKE, whose
// results follow the server's locale.
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
// Two things the caller should know. The patterns are regular expressions,
// which no B-tree index serves, so a pinned read scans its partition's
// table. And a condition on a content property carries a recursive walk
// whose planner estimate (about a thousand per row) exceeds jit_above_cost
// on any table of more than a hundred rows or so: with PostgreSQL's default
// jit = on, compiling it takes most of a second while running it takes
// milliseconds, so run these statements on connections with jit = off.
//
// The generated SQL assumes rows as pgstore writes them (an id is one path
// segment; state holds a named mesh.State); ScanNode refuses others.
package sqlgen
