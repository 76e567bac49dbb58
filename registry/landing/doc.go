// Package landing stores a registry's modules on a [Volume]: it lands
// module versions, keeps their records and derives the activation list.
//
// A [ModuleLanding] writes each landed version into a fresh, immutable
// generation directory (staged, then renamed into place) and then writes an
// immutable record of its own. A published version is immutable too: its
// first landing claims it on the volume, the same bytes again change
// nothing, other bytes are a [*VersionConflictError], also after
// [ModuleLanding.Remove]: a version number is never reused. A write's
// record is renamed into place as its commit point, which runs on a budget
// of its own ([CommitBudget]) once started: a write reports what happened,
// or [*CommitUnknownError] when that could not be told. Nothing is ever read,
// modified and written back: the activation list is derived from the
// records present, the latest record per module winning. Several processes
// sharing one volume root are replicas. A record's name starts with its
// module's sequence number, one more than the highest its writer listed, so
// a record sorts after every record its writer saw whatever the replicas'
// clocks say (concurrent records share a number and sort by the rest of
// their names, the same way on every replica): every replica derives the
// same list. Before its commit, every record write claims an entry on the
// volume's journal ([ModuleLanding.ReadJournal]), which replicas tail to
// learn of each other's writes in O(changes), and by which
// [ModuleLanding.ReconcileChanges] re-derives the activation list from an
// earlier one reading only the modules written since.
//
// On an [ExclusiveVolume] (object storage, which has no rename:
// registry/landing/s3volume) nothing is staged or renamed: files are
// written under their final names, and each claim and commit (a version's
// claim, a journal entry, a record) is a conditional create that fails when
// the name exists, so the guarantees above hold there too.
//
// Landings and other record writes run one at a time on a landing lane.
// Authoritative reads ([ModuleLanding.Activation], [ModuleLanding.OpenBundle])
// run on a separate read pool, never behind a landing, and never see a
// landing half done: they see the previous activation until the new record
// exists. Archives are checked before they land ([*ArchiveError]).
//
// Every wait (for the lane, for a read slot, for the volume) is bounded by
// the caller's context, and when it trips the error is a [*WaitError] naming
// what was waited on. A nil *slog.Logger means slog.Default().
//
// # Examples
//
// Example (example_test.go) is a worked example,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./registry/landing/.
package landing
