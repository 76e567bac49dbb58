// Package registry is the plugin registry's storage side: it lands module
// versions on a volume and derives which of them are served.
//
// A [ModuleLanding] writes each landed version into a fresh, immutable
// generation directory (staged, then renamed into place) and then writes an
// immutable record of its own. Nothing is ever read, modified and written
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
package registry
