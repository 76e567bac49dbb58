// Package callers is a fixture for the allow-list caller walk: a non-test
// file whose string literals the walk must find.
package callers

// Widgets is a query literal the walk must report.
const Widgets = "nodeType:Widget scope:children"

// Messages are literals that do not parse as queries, or are not queries.
var Messages = []string{"unclosed \"quote", "hello world", "nodeType:A OR"}
