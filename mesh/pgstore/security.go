package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/mesh"
)

// SecurityNodes returns every node of a security type (a type listed in
// public.security_fold_types: Options.GatedTypes, without case) from every partition schema and
// global satellite schema, read from public.security_fold in one statement:
// the fold is never paged and never narrowed. The triggers that maintain it
// run in each writing transaction, so the snapshot is exactly the committed
// writes, with the version they produced. Nodes come in path order. A
// database that cannot answer within Budgets.Permission is a
// *mesh.UnavailableError.
func (s *Store) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	if err := s.usable("SecurityNodes", ctx, true); err != nil {
		return mesh.SecuritySnapshot{}, err
	}
	const op = "read the security fold"
	if s.isClosed() {
		return mesh.SecuritySnapshot{}, unavailable(op, ErrClosed)
	}
	ctx, cancel, explain := s.bounded(ctx, s.budgets.Permission, "reading the security fold")
	defer cancel()
	// One statement, so the version and the rows come from one snapshot; the
	// one-row version table is joined, not a second read.
	rows, err := s.pool.Query(ctx, `
		SELECT v.version, v.token, f.namespace, f.id, f.path, f.name, f.node_type, f.main_node, f.content, f.version, f.state, f.last_modified
		FROM public.security_fold_version v
		LEFT JOIN public.security_fold f ON true
		ORDER BY f.path COLLATE "C", f.schema_name, f.table_name`)
	if err != nil {
		return mesh.SecuritySnapshot{}, unavailable(op, explain(err))
	}
	snap := mesh.SecuritySnapshot{GatedTypes: s.gated}
	for rows.Next() {
		n, present, err := scanFoldRow(rows, &snap.Version)
		if err != nil {
			rows.Close()
			return mesh.SecuritySnapshot{}, unavailable(op, err)
		}
		if present {
			snap.Nodes = append(snap.Nodes, n)
		}
	}
	if err := rows.Err(); err != nil {
		return mesh.SecuritySnapshot{}, unavailable(op, explain(err))
	}
	return snap, nil
}

// SecurityVersion returns the version SecurityNodes would return now: one
// row (public.security_fold_version), which the triggers that maintain the
// fold bump in each writing transaction, its counter moved and a fresh
// random token drawn (see mesh.SecurityVersion: a restored dump or a
// lagging standby written again does not give an old version back), so a
// reader that keeps a fold reads the fold's rows only when this moved. A
// database that cannot answer within Budgets.Permission is a
// *mesh.UnavailableError.
func (s *Store) SecurityVersion(ctx context.Context) (mesh.SecurityVersion, error) {
	if err := s.usable("SecurityVersion", ctx, true); err != nil {
		return mesh.SecurityVersion{}, err
	}
	const op = "read the security fold version"
	if s.isClosed() {
		return mesh.SecurityVersion{}, unavailable(op, ErrClosed)
	}
	ctx, cancel, explain := s.bounded(ctx, s.budgets.Permission, "reading the security fold version")
	defer cancel()
	var v mesh.SecurityVersion
	if err := s.pool.QueryRow(ctx, `SELECT version, token FROM public.security_fold_version`).Scan(&v.Seq, &v.Token); err != nil {
		return mesh.SecurityVersion{}, unavailable(op, explain(err))
	}
	return v, nil
}

// scanFoldRow reads one row of the fold query into the fold version and a
// node; present is false for the version row joined to an empty fold.
func scanFoldRow(rows pgx.Rows, foldVersion *mesh.SecurityVersion) (n mesh.Node, present bool, err error) {
	var (
		namespace, id, path, name, typ, mainNode *string
		content                                  []byte
		version                                  *int64
		state                                    *int16
		modified                                 *time.Time
	)
	if err := rows.Scan(&foldVersion.Seq, &foldVersion.Token, &namespace, &id, &path, &name, &typ, &mainNode, &content, &version, &state, &modified); err != nil {
		return mesh.Node{}, false, err
	}
	if id == nil || version == nil || state == nil || modified == nil {
		return mesh.Node{}, false, nil
	}
	if *state < 0 || *state > 255 {
		return mesh.Node{}, false, fmt.Errorf("pgstore: folded node %s has state %d, outside the range of mesh.State", deref(path), *state)
	}
	n = mesh.Node{
		ID: *id, Namespace: deref(namespace), Path: deref(path), NodeType: deref(typ), Name: deref(name),
		MainNode: deref(mainNode), Version: *version, State: mesh.State(*state), LastModified: modified.UTC(),
	}
	if content != nil {
		n.Content = content
	}
	return n, true, nil
}

// addFoldTypes adds gated node types to public.security_fold_types and
// backfills their rows (see the SQL function), waiting at most budget
// (TableLockBudget; 0 waits without bound) for each table lock: it locks
// the types table ACCESS EXCLUSIVE, and every write queues behind that
// request while it waits.
func addFoldTypes(ctx context.Context, db DB, types []string, budget time.Duration) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := setLocal(ctx, tx, "lock_timeout", fmt.Sprint(budget.Milliseconds())); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT public.security_fold_add_types($1)`, types); err != nil {
			if pgCode(err) == "55P03" {
				return &LockTimeoutError{Lock: "locks to add gated types (public.security_fold_types, then the node tables its backfill reads)", After: budget, Err: err}
			}
			return fmt.Errorf("adding gated types to the security fold: %w", err)
		}
		return nil
	})
}

var _ mesh.SecurityVersioner = (*Store)(nil)
