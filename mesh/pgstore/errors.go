package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/meshrx/meshrx/mesh"
)

// ErrClosed is wrapped by the errors of a Store that has been closed. Reads
// on a closed store fail with a *mesh.UnavailableError around it: the store
// cannot say what is there, which is never the same as "absent".
var ErrClosed = errors.New("pgstore: store is closed")

// BudgetError reports a database wait that used up the budget the store
// gives it. It is wrapped in a *mesh.UnavailableError.
type BudgetError struct {
	What   string // what was waited on
	Budget time.Duration
	Err    error
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("pgstore: no answer within %s while %s: %v", e.Budget, e.What, e.Err)
}

func (e *BudgetError) Unwrap() error { return e.Err }

// bounded returns ctx limited to budget, and a function that names the
// budget in an error caused by it running out (and leaves others alone).
func bounded(ctx context.Context, budget time.Duration, what string) (context.Context, context.CancelFunc, func(error) error) {
	inner, cancel := context.WithTimeout(ctx, budget)
	explain := func(err error) error {
		if err == nil || ctx.Err() != nil || !errors.Is(inner.Err(), context.DeadlineExceeded) {
			return err
		}
		return &BudgetError{What: what, Budget: budget, Err: err}
	}
	return inner, cancel, explain
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
