package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore/internal/sqlgen"
)

// rollbackBudget bounds the rollback that ends LocksHeld's transaction.
const rollbackBudget = 5 * time.Second

// LocksHeld reports how many relation locks (tables and indexes) the
// Initial read of q takes: it runs the statement Query runs for q's Initial
// (the same SELECT, or UNION ALL over every schema and each table q's node
// types can be in, over the partitions the store knows now) inside a READ
// ONLY transaction, counts
// that transaction's rows of pg_locks with locktype 'relation' (leaving out
// the pg_locks view the count itself reads), and rolls back.
//
// It is an operator's diagnostic for the cost a query shape puts on the
// lock manager: a backend has 16 fast-path lock slots (PostgreSQL 17 and
// earlier) and every lock beyond them goes through the shared lock table,
// so a read of one table stays within them while a fan-out over many
// schemas does not. The statement is planned
// afresh, as on a connection that has not run it before, where the planner
// locks every index of every table it reads; a cached generic plan of the
// same statement locks the tables and only the indexes it uses.
//
// A query that does not parse fails with *mesh.ParseError, one the router
// refuses with *mesh.UnanchoredQueryError. An unroutable query, or one
// whose partitions do not exist yet, reads nothing and takes no lock: 0.
// A database that does not answer within Budgets.QueryInitial, or a closed
// store, is a *mesh.UnavailableError.
func (s *Store) LocksHeld(ctx context.Context, q string) (int, error) {
	if err := s.usable("LocksHeld", ctx, true); err != nil {
		return 0, err
	}
	parsed, err := mesh.Parse(q)
	if err != nil {
		return 0, err
	}
	op := "count the relation locks of query " + parsed.String()
	if s.isClosed() {
		return 0, unavailable(op, ErrClosed)
	}
	route, err := s.router.Route(parsed, s.schemas.partitionList())
	if err != nil {
		return 0, err
	}
	if route.Kind == mesh.Unroutable {
		return 0, nil
	}
	p := planFor(parsed, route.Reach())
	ctx, cancel, explain := s.bounded(ctx, s.budgets.QueryInitial, "counting the relation locks of query "+parsed.String())
	defer cancel()
	covered := s.covered(p)
	existing := s.schemas.existing(covered)
	if len(existing) < len(covered) {
		if err := s.schemas.load(ctx, s.pool); err != nil {
			return 0, unavailable(op, explain(err))
		}
		existing = s.schemas.existing(covered)
	}
	tables, err := s.readTables(ctx, p)
	if err != nil {
		return 0, unavailable(op, explain(err))
	}
	if len(tables) == 0 || len(existing) == 0 {
		return 0, nil // the read runs no statement
	}
	sel, err := sqlgen.BuildTables(parsed, tables, existing)
	if err != nil {
		return 0, fmt.Errorf("pgstore: %s: %w", op, err)
	}
	n, err := s.countLocks(ctx, sel)
	if err != nil {
		if s.ctx.Err() != nil {
			err = errors.Join(ErrClosed, err)
		}
		return 0, unavailable(op, explain(err))
	}
	return n, nil
}

// countLocks runs sel in a READ ONLY transaction and counts the relation
// locks the transaction holds afterwards; it always rolls back.
func (s *Store) countLocks(ctx context.Context, sel sqlgen.Select) (n int, err error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, fmt.Errorf("beginning a read-only transaction: %w", err)
	}
	defer func() {
		// Its own budget: ctx may be what ended the work, and an unfinished
		// rollback would leave the connection holding every lock counted.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackBudget)
		defer cancel()
		if rerr := tx.Rollback(rctx); rerr != nil && !errors.Is(rerr, pgx.ErrTxClosed) {
			err = errors.Join(err, fmt.Errorf("rolling back (budget %s): %w", rollbackBudget, rerr))
		}
	}()
	// QueryExecModeExec sends the statement unnamed, with its arguments:
	// planned for this run, never a generic plan cached on the connection.
	args := append([]any{pgx.QueryExecModeExec}, sel.Args...)
	rows, err := tx.Query(ctx, sel.SQL, args...)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	err = tx.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_locks
		WHERE pid = pg_backend_pid() AND locktype = 'relation'
		  AND relation IS DISTINCT FROM 'pg_catalog.pg_locks'::regclass`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("reading pg_locks: %w", err)
	}
	return n, nil
}
