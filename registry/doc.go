// Package registry is the plugin registry's server: it serves each caller
// the index and bundles its grant entitles it to, and takes publications —
// answering within a declared deadline or refusing with the stage it waited
// on.
//
// Its neighbours each do one job: package registry/landing stores module
// versions on a volume (landing, records, archive checks), package
// registry/client consumes a registry (Client, Reconciler and the wire
// types), and the module's internal answer package holds the request
// deadline every route answers within.
//
// # Serving
//
// The index never scans: it reads a [ServedActivation], a snapshot of a
// landing.ModuleLanding's activation maintained by the service — patched
// (or, without the change feed, dropped) by this replica's own writes before
// they are reported; patched with every record another replica commits
// within Freshness (30 s) by tailing the volume's journal, and sooner
// through the change feed when the writer announced it; re-derived in full
// as a reconciliation behind both, with one derivation in flight owned by
// the service rather than by the request that started it. See
// docs/replicas.md for what replicas guarantee each other.
//
// Every request carries a ledger from its arrival; each wait enters it as a
// named stage. A route answers within its budget ([IndexBudget],
// [DownloadBudget]) or refuses with 503 + Retry-After, naming in its body and
// in one warning the stages it was still waiting on.
//
// A [Server] is the registry's HTTP API. Its bundle index is assembled once
// per publication or entitlement change and kept, never built per request: a
// request authenticates, reads the snapshot and the package catalog (one live
// query the server owns, not one per request), and gets the document kept
// for its entitlement, or 304. A download decides entitlement from the
// catalog before it touches the volume and, when the caller may not have the
// bundle, answers exactly as for a bundle that does not exist, after the same
// work. A package whose tier the catalog does not know is served to nobody.
// A caller that holds a document asks for what changed since
// (client.SinceParam, its digest) and gets the entries added, changed and
// removed for its entitlement (client.IndexDelta), from a bounded history
// kept per entitlement, or 410 Gone when the history does not reach back to
// it. The ETag is the root of a Merkle tree over the entries (package
// internal/indexdigest); see docs/index-deltas.md.
// A publication makes its package node durable before its bundle lands.
// Its budget (ServerOptions.PublishBudget) bounds it up to the landing's
// commit point, the rename that makes the version visible: short of it, the
// answer is 503 and nothing is served; a landing committing when the budget
// runs out is finished (landing.CommitBudget) and answered as landed. A
// published version is immutable and its number is never reused: after
// ServedActivation.Remove, other bytes under it are still a 409 naming the
// sha256 it holds, and the same bytes land again (201).
//
// A nil *slog.Logger means slog.Default().
//
// # Examples
//
// Example (example_test.go) is a worked example,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./registry/.
package registry
