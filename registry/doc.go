// Package registry is the plugin registry: it lands module versions on a
// volume, derives which of them are served, serves each caller the index and
// bundles its grant entitles it to — answering within a declared deadline or
// refusing with the stage it waited on — and consumes another registry.
//
// A [ModuleLanding] writes each landed version into a fresh, immutable
// generation directory (staged, then renamed into place) and then writes an
// immutable record of its own. A published version is immutable too: its
// first landing claims it on the volume, the same bytes again change
// nothing, other bytes are a [*VersionConflictError]. Nothing is ever read, modified and written
// back: the activation list is derived from the records present, the latest
// record per module winning. Several processes sharing one volume root are
// replicas; record file names sort in event order, so every replica derives
// the same list.
//
// Landings and other record writes run one at a time on a landing lane.
// Authoritative reads ([ModuleLanding.Activation], [ModuleLanding.OpenBundle])
// run on a separate read pool, never behind a landing, and never see a landing
// half done: they see the previous activation until the new record exists.
//
// Every wait (for the lane, for a read slot, for the volume) is bounded by the
// caller's context, and when it trips the error is a [*WaitError] naming what
// was waited on.
//
// # Serving
//
// The index never scans: it reads a [ServedActivation], a snapshot maintained
// by the service — invalidated by this replica's own writes before they are
// reported, re-derived once per freshness window for other replicas' records,
// with one derivation in flight owned by the service rather than by the
// request that started it.
//
// Every request carries a [Ledger] from its arrival; each wait enters it as a
// named stage ([InStage]). A route answers within its [Deadline] or refuses
// with 503 + Retry-After, naming in its body and in one warning the stages it
// was still waiting on.
//
// A [Server] is the registry's HTTP API. Its bundle index is assembled once
// per publication or entitlement change and kept, never built per request: a
// request authenticates, reads the snapshot and the package catalog (one live
// query the server owns, not one per request), and gets the document kept
// for its entitlement, or 304. A download decides entitlement from the
// catalog before it touches the volume and, when the caller may not have the
// bundle, answers exactly as for a bundle that does not exist, after the same
// work. A package whose tier the catalog does not know is served to nobody.
// A publication makes its package node durable before its bundle lands.
//
// # Consuming
//
// A [Client] fetches the index and bundles with bounded attempts that honour
// Retry-After, and verifies each bundle against the sha256 the index lists; a [Reconciler] polls it and lands new versions, and when it
// cannot it leaves a mark an operator reads: its Status, a gauge, and one
// warning per transition into failure.
package registry
