package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// ErrClosed is wrapped by the errors of a Store that has been closed. Reads
// on a closed store fail with a *mesh.UnavailableError around it: the store
// cannot say what is there, which is never the same as "absent".
var ErrClosed = errors.New("pgstore: store is closed")

// BudgetError reports a database wait that used up the budget the store
// gives it, on the store's clock (Options.Clock). It is wrapped in a
// *mesh.UnavailableError and unwraps to context.DeadlineExceeded, never to
// context.Canceled: on a clock other than the real one the budget ends the
// statement by cancelling its context, and the driver's error then says
// "canceled", which a caller would read as its own giving up.
type BudgetError struct {
	What   string // what was waited on
	Budget time.Duration
	Err    error // the driver's error, for its text
}

func (e *BudgetError) Error() string {
	if e.Err == nil || errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
		return fmt.Sprintf("pgstore: no answer within %s while %s: %v", e.Budget, e.What, context.DeadlineExceeded)
	}
	return fmt.Sprintf("pgstore: no answer within %s while %s: %v (%v)", e.Budget, e.What, context.DeadlineExceeded, e.Err)
}

// Unwrap returns context.DeadlineExceeded: the budget is what ended the
// wait, whatever the driver made of it.
func (e *BudgetError) Unwrap() error { return context.DeadlineExceeded }

// FeedDownError is why the change feed is down, as FeedDown sends it: the
// cause the listener met (nil before its first connection), the
// reconnections so far and the wait before the next attempt. It unwraps to
// the cause.
type FeedDownError struct {
	Err        error
	Reconnects int64
	RetryIn    time.Duration
}

func (e *FeedDownError) Error() string {
	switch {
	case e.Err == nil:
		return "pgstore: the change feed is not connected"
	case e.RetryIn > 0:
		return fmt.Sprintf("pgstore: the change feed is down, next attempt in %s: %v", e.RetryIn, e.Err)
	}
	return fmt.Sprintf("pgstore: the change feed is down: %v", e.Err)
}

func (e *FeedDownError) Unwrap() error { return e.Err }

// OutcomeUnknownError reports a write whose statement was sent to the
// database but whose answer did not come: its budget ran out (Err is then a
// *BudgetError) or its connection broke after sending. PostgreSQL may have
// committed it; nothing here can tell (when a sent statement's context
// ends, the driver closes its connection and sends the server a cancel
// request: the statement commits unless that lands first). It is wrapped
// in a *mesh.UnavailableError and unwraps to mesh.ErrOutcomeUnknown and to
// Err. A write that failed before its statement was sent (waiting for a
// connection, creating its schema) is a plain *mesh.UnavailableError.
type OutcomeUnknownError struct {
	Err error
}

func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("pgstore: the write may have committed: it was sent, and its answer did not come: %v", e.Err)
}

func (e *OutcomeUnknownError) Unwrap() []error { return []error{mesh.ErrOutcomeUnknown, e.Err} }

// sentWrite marks err, the error of a write statement, as an
// *OutcomeUnknownError unless the server answered it (a *pgconn.PgError: an
// autocommit statement that fails is rolled back) or it certainly failed
// before anything was sent (pgconn.SafeToRetry).
func sentWrite(err error) error {
	if err == nil || errors.Is(err, pgx.ErrNoRows) || pgCode(err) != "" || pgconn.SafeToRetry(err) {
		return err
	}
	return &OutcomeUnknownError{Err: err}
}

// writeOutcome names the budget (explain) in err, a write's error, inside
// its *OutcomeUnknownError if it has one, so that the outcome stays the
// first thing it says.
func writeOutcome(err error, explain func(error) error) error {
	var unknown *OutcomeUnknownError
	if errors.As(err, &unknown) {
		return &OutcomeUnknownError{Err: explain(unknown.Err)}
	}
	return explain(err)
}

// bounded returns ctx limited to budget on the store's clock, and a function
// that names the budget in an error caused by it running out (and leaves
// others alone). On another clock than the real one (Options.Clock) the
// budget is a timer of that clock cancelling the context (cause
// context.DeadlineExceeded), not a deadline: a virtual instant means
// nothing to the driver, which would take it for a real one (pgxpool
// copies a deadline into its ping of an idle connection; a dialer gives up
// at once). On the real clock it is a deadline (same cause), which the
// driver and the dialer see.
func (s *Store) bounded(ctx context.Context, budget time.Duration, what string) (context.Context, context.CancelFunc, func(error) error) {
	var inner context.Context
	var cancel context.CancelFunc
	if s.realClock {
		inner, cancel = context.WithTimeoutCause(ctx, budget, context.DeadlineExceeded)
	} else {
		c, cancelCause := context.WithCancelCause(ctx)
		stop := afterOn(s.clk, budget, func() { cancelCause(context.DeadlineExceeded) })
		inner, cancel = c, func() { stop(); cancelCause(context.Canceled) }
	}
	explain := func(err error) error {
		// A parent that ended (the caller's context, an enclosing budget)
		// is not this budget, whatever its cause.
		if err == nil || ctx.Err() != nil || context.Cause(inner) != context.DeadlineExceeded {
			return err
		}
		return &BudgetError{What: what, Budget: budget, Err: err}
	}
	return inner, cancel, explain
}

// afterOn runs f once, d from now on clk: in the Advance that reaches it on
// a clock that schedules callbacks itself (rx.Scheduler, as rxtest.Clock
// does), else as clk.AfterFunc. stop reports whether it prevented f.
func afterOn(clk clock.Clock, d time.Duration, f func()) (stop func() bool) {
	if sch, ok := clk.(rx.Scheduler); ok {
		return sch.Schedule(d, f)
	}
	return clk.AfterFunc(d, f).Stop
}

// pgCode returns the SQLSTATE of err, or "".
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// missingRelation reports an error saying a schema or table does not exist.
func missingRelation(err error) bool {
	switch pgCode(err) {
	case "42P01", "3F000": // undefined_table, invalid_schema_name
		return true
	}
	return false
}

// writeError classifies an error of a write to path: a value PostgreSQL
// refuses is the caller's *mesh.NodeError; anything else means the store
// could not do it, a *mesh.UnavailableError.
func writeError(op, path string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "22"): // data_exception
			field := "node"
			if pgErr.Code == "22P05" || pgErr.Code == "22P02" || strings.Contains(pgErr.Message, "json") {
				field = "content"
			}
			return &mesh.NodeError{Path: path, Field: field, Reason: "PostgreSQL cannot store the value: " + pgErr.Message, Err: err}
		case pgErr.Code == "23514": // check_violation
			field := "node"
			if strings.Contains(pgErr.ConstraintName, "node_type") {
				field = "nodeType"
			} else if strings.Contains(pgErr.ConstraintName, "path") {
				field = "path"
			}
			return &mesh.NodeError{Path: path, Field: field, Reason: "PostgreSQL refused the value: " + pgErr.Message, Err: err}
		}
	}
	return &mesh.UnavailableError{Op: op, Err: err}
}
