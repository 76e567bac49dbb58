package mesh

import (
	"context"

	"github.com/meshrx/meshrx/rx"
)

// Store is a mesh store: memstore in process, pgstore on PostgreSQL. Every
// store passes the same conformance suite (mesh/meshtest).
type Store interface {
	// Query parses q, routes it and returns its live result: an Initial frame
	// with the full result, then Added/Updated/Removed frames as writes land
	// (and Reset after a gap in the feed). A query that does not parse fails
	// with *ParseError, one the router refuses with *UnanchoredQueryError, an
	// unroutable one answers an empty Initial. A provider that stays silent
	// past the initial budget ends it with *ProviderStalledError. An
	// observer that panics on a frame the store delivers from its own
	// goroutine ends only its own subscription, with *ObserverPanicError
	// (likewise for Changes).
	Query(q string) rx.Observable[Change]

	// Get reads one node: the node then completion when it is present,
	// completion alone when it is absent, an error when the store could not
	// find out (IsUnavailable reports true). "Could not find out" is never
	// "absent".
	Get(path string) rx.Observable[Node]

	// Put writes n (normalised: Path or Namespace+ID) and returns what was
	// stored. The version is bumped only when something visible changed.
	// A write (Put, PutIfVersion, Delete) that reached the store but whose
	// answer did not come fails with an error wrapping ErrOutcomeUnknown:
	// it may have been applied. That includes ctx ending after the write
	// was sent, so such an error may also match context.Canceled or
	// context.DeadlineExceeded: check ErrOutcomeUnknown before those. A
	// ctx error without ErrOutcomeUnknown means nothing was written.
	Put(ctx context.Context, n Node) (Node, error)

	// PutIfVersion is Put made conditional, a compare-and-set on the
	// node's version decided by the store itself (in PostgreSQL, by the
	// database, so replicas are covered): n is written only if the node at
	// its path is at version expected now, 0 meaning absent. Otherwise
	// nothing is written and it fails with *VersionConflictError. A write
	// that changes nothing visible at the expected version succeeds and
	// returns the node as it is, like Put.
	PutIfVersion(ctx context.Context, n Node, expected int64) (Node, error)

	// Delete removes the node at path; deleting an absent node is not an error.
	Delete(ctx context.Context, path string) error

	// Changes announces every write, from this process and (for shared
	// stores) from its replicas.
	Changes() rx.Observable[ChangeNotice]
}

// Provider is one source of a query's result, merged by FanIn. It must send
// exactly one Initial frame first; it may complete after it (a one-shot
// read) or stay live.
type Provider interface {
	Name() string
	Query(q *Query) rx.Observable[Change]
}
