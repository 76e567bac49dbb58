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

// Put stores n, normalised (mesh.Node.Normalize), in the table
// mesh.TableFor(path) of its partition's schema (created on the first write
// to it), and returns what was stored. The store owns Version and
// LastModified: a new node gets version 1, and a write that changes what a
// reader sees (content, compared as JSON values; name; node type; state;
// main node) gets the next version and the clock's time. A write that
// changes none of them stores nothing, announces nothing and returns the
// node as it was. The write is announced through the database (Changes).
//
// Put fails with the *mesh.NodeError of an invalid node, an
// *mesh.UnroutablePathError or *PartitionNameError for a path no schema can
// hold, ctx's error when ctx had ended before anything was sent (nothing
// is written), ErrClosed, or a *mesh.UnavailableError when the database
// could not do it. That error wraps mesh.ErrOutcomeUnknown (an
// *OutcomeUnknownError) when the write was sent but its answer did not
// come: it may have committed. This includes ctx ending while the sent
// write waits, so such an error matches context.Canceled or
// context.DeadlineExceeded as well: check mesh.ErrOutcomeUnknown first.
func (s *Store) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	if err := s.usable("Put", ctx, true); err != nil {
		return mesh.Node{}, err
	}
	return s.put(ctx, n, unconditional)
}

// PutIfVersion is Put only if the node at n's path is at version expected
// (0: absent). The database decides, in the writing statement (an UPDATE
// or INSERT whose condition is the version), so it holds across replicas;
// when the node is at another version nothing is written and it fails with
// *mesh.VersionConflictError. A negative expected version is a
// *mesh.NodeError.
func (s *Store) PutIfVersion(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	if err := s.usable("PutIfVersion", ctx, true); err != nil {
		return mesh.Node{}, err
	}
	if expected < 0 {
		return mesh.Node{}, &mesh.NodeError{Path: n.Path, Field: "version",
			Reason: fmt.Sprintf("expected version %d is negative", expected)}
	}
	return s.put(ctx, n, expected)
}

// unconditional is the expected version of a plain Put.
const unconditional = -1

func (s *Store) put(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	if err := ctx.Err(); err != nil {
		return mesh.Node{}, fmt.Errorf("pgstore: put %q: %w", n.Path, err)
	}
	n, err := n.NormalizeWrite()
	if err != nil {
		return mesh.Node{}, err
	}
	schema, global, err := s.schemaFor(n.Path)
	if err != nil {
		return mesh.Node{}, err
	}
	if s.isClosed() {
		return mesh.Node{}, fmt.Errorf("pgstore: put %q: %w", n.Path, ErrClosed)
	}
	op := "put " + n.Path
	ctx, cancel, explain := s.bounded(ctx, s.budgets.Operation, op)
	defer cancel()

	var stored mesh.Node
	for attempt := 0; ; attempt++ {
		if err := s.ensureSchema(ctx, schema, global, mesh.Partition(n.Path)); err != nil {
			return mesh.Node{}, writeError(op, n.Path, explain(err))
		}
		if expected == unconditional {
			stored, err = s.upsert(ctx, schema, n)
		} else {
			stored, err = s.compareAndSet(ctx, schema, n, expected)
		}
		if err == nil {
			// This store's own reads route by type at once, before the
			// write's notice arrives.
			s.schemas.addType(mesh.TableFor(n.Path), n.NodeType)
			return stored, nil
		}
		if conflict := (*mesh.VersionConflictError)(nil); errors.As(err, &conflict) {
			return mesh.Node{}, conflict
		}
		if attempt == 0 && missingRelation(err) { // dropped behind the store's back: create it again
			s.schemas.forget(schema)
			continue
		}
		return mesh.Node{}, writeError(op, n.Path, writeOutcome(err, explain))
	}
}

// writeRow runs sql, a statement that writes one row and returns it, on a
// connection acquired first, and scans the row. Waiting for the connection
// sends nothing; once the statement was sent, an error without the
// server's answer is an *OutcomeUnknownError (sentWrite).
func (s *Store) writeRow(ctx context.Context, sql string, args ...any) (mesh.Node, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return mesh.Node{}, err
	}
	defer conn.Release()
	n, err := scanNode(conn.QueryRow(ctx, sql, args...))
	return n, sentWrite(err)
}

// ensureSchema creates the schema on the first write to it.
func (s *Store) ensureSchema(ctx context.Context, schema string, global bool, partition string) error {
	if s.schemas.has(schema) {
		return nil
	}
	if global {
		if err := EnsureGlobalSchema(ctx, s.pool, schema); err != nil {
			return err
		}
		s.schemas.addGlobal(schema)
		return nil
	}
	if _, err := EnsurePartition(ctx, s.pool, partition); err != nil {
		return err
	}
	s.schemas.addPartition(schema)
	return nil
}

// upsert writes n with one statement in the common case: the conditional
// upsert bumps version and LastModified only when a visible field differs
// (jsonb equality for content, so key order, spacing and number spelling do
// not count) and returns the row. When it changes nothing it returns no
// row, and the row is read as stored; if a concurrent delete got there
// first, the write is tried again.
func (s *Store) upsert(ctx context.Context, schema string, n mesh.Node) (mesh.Node, error) {
	table := pgx.Identifier{schema, mesh.TableFor(n.Path)}.Sanitize()
	// The folded keys (sqlgen.KeysOf) go with every write, so the row is
	// found by the key indexes at once.
	upsert := `INSERT INTO ` + table + ` AS t (namespace, id, name, node_type, main_node, content, version, state, last_modified,
			` + sqlgen.KeyColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT (namespace, id) DO UPDATE SET
			name = EXCLUDED.name, node_type = EXCLUDED.node_type, main_node = EXCLUDED.main_node,
			content = EXCLUDED.content, state = EXCLUDED.state,
			version = t.version + 1, last_modified = EXCLUDED.last_modified,
			ns_key = EXCLUDED.ns_key, id_key = EXCLUDED.id_key, path_key = EXCLUDED.path_key,
			name_key = EXCLUDED.name_key, type_key = EXCLUDED.type_key, main_key = EXCLUDED.main_key
		WHERE (t.name, t.node_type, t.main_node, t.state, coalesce(t.content, 'null'::jsonb))
			IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.node_type, EXCLUDED.main_node, EXCLUDED.state, coalesce(EXCLUDED.content, 'null'::jsonb))
		RETURNING ` + nodeColumns
	var content any
	if len(n.Content) > 0 {
		content = n.Content
	}
	keys := sqlgen.KeysOf(n.Namespace, n.ID, n.Name, n.NodeType, n.MainNode).Values()
	const attempts = 3
	for range attempts {
		now := s.clk.Now().UTC().Truncate(time.Microsecond) // PostgreSQL keeps microseconds
		stored, err := s.writeRow(ctx, upsert, append([]any{
			n.Namespace, n.ID, n.Name, n.NodeType, n.MainNode, content, int16(n.State), now}, keys...)...)
		if !errors.Is(err, pgx.ErrNoRows) {
			return stored, err
		}
		stored, err = scanNode(s.pool.QueryRow(ctx, `SELECT `+nodeColumns+` FROM `+table+` WHERE namespace = $1 AND id = $2`,
			n.Namespace, n.ID))
		if !errors.Is(err, pgx.ErrNoRows) {
			return stored, err
		}
	}
	return mesh.Node{}, fmt.Errorf("the node was deleted concurrently %d times while being written", attempts)
}

// compareAndSet writes n only if its row is at version expected (0:
// absent), in one statement whose condition is the version, so concurrent
// writers on any replica cannot both succeed from the same version. Like
// upsert it bumps version and LastModified only for a visible change. When
// the statement writes no row, the row is read to tell a no-op at the
// expected version (success) from a conflict; a row that vanished or came
// back in between is tried again.
func (s *Store) compareAndSet(ctx context.Context, schema string, n mesh.Node, expected int64) (mesh.Node, error) {
	table := pgx.Identifier{schema, mesh.TableFor(n.Path)}.Sanitize()
	var write string
	if expected == 0 {
		write = `INSERT INTO ` + table + ` AS t (namespace, id, name, node_type, main_node, content, version, state, last_modified,
				` + sqlgen.KeyColumns + `)
			VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (namespace, id) DO NOTHING
			RETURNING ` + nodeColumns
	} else {
		write = `UPDATE ` + table + ` AS t SET
				name = $3, node_type = $4, main_node = $5, content = $6, state = $7,
				version = t.version + 1, last_modified = $8,
				ns_key = $9, id_key = $10, path_key = $11, name_key = $12, type_key = $13, main_key = $14
			WHERE t.namespace = $1 AND t.id = $2 AND t.version = $15
			  AND (t.name, t.node_type, t.main_node, t.state, coalesce(t.content, 'null'::jsonb))
				IS DISTINCT FROM ($3::text, $4::text, $5::text, $7::smallint, coalesce($6::jsonb, 'null'::jsonb))
			RETURNING ` + nodeColumns
	}
	var content any
	if len(n.Content) > 0 {
		content = n.Content
	}
	// The folded keys go with the write, as upsert's do.
	keys := sqlgen.KeysOf(n.Namespace, n.ID, n.Name, n.NodeType, n.MainNode).Values()
	const attempts = 3
	for range attempts {
		now := s.clk.Now().UTC().Truncate(time.Microsecond) // PostgreSQL keeps microseconds
		args := append([]any{n.Namespace, n.ID, n.Name, n.NodeType, n.MainNode, content, int16(n.State), now}, keys...)
		if expected != 0 {
			args = append(args, expected)
		}
		stored, err := s.writeRow(ctx, write, args...)
		if !errors.Is(err, pgx.ErrNoRows) {
			return stored, err
		}
		held, err := scanNode(s.pool.QueryRow(ctx, `SELECT `+nodeColumns+` FROM `+table+` WHERE namespace = $1 AND id = $2`,
			n.Namespace, n.ID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if expected == 0 {
				continue // deleted since the insert met it
			}
			return mesh.Node{}, &mesh.VersionConflictError{Path: n.Path, Expected: expected}
		case err != nil:
			return mesh.Node{}, err
		case held.Version == expected:
			return held, nil // nothing visible to change
		default:
			return mesh.Node{}, &mesh.VersionConflictError{Path: n.Path, Expected: expected, Actual: held.Version}
		}
	}
	return mesh.Node{}, fmt.Errorf("the node appeared and vanished concurrently %d times while being written", attempts)
}

// Delete removes the node at exactly path. Deleting an absent node, or one
// under a path no schema can hold, is not an error. It fails with
// *mesh.PathError for an invalid path, ctx's error when ctx had ended
// before anything was sent (nothing is deleted), ErrClosed, or a
// *mesh.UnavailableError (wrapping mesh.ErrOutcomeUnknown when the DELETE
// was sent but its answer did not come, ctx ending meanwhile included: it
// may have committed; such an error may also match context.Canceled or
// context.DeadlineExceeded, so check mesh.ErrOutcomeUnknown first).
func (s *Store) Delete(ctx context.Context, path string) error {
	if err := s.usable("Delete", ctx, true); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pgstore: delete %q: %w", path, err)
	}
	if err := mesh.ValidatePath(path); err != nil {
		return err
	}
	schema, _, err := s.schemaFor(path)
	if err != nil {
		if isUnroutable(err) {
			return nil // nothing can be stored there
		}
		return err
	}
	if s.isClosed() {
		return fmt.Errorf("pgstore: delete %q: %w", path, ErrClosed)
	}
	op := "delete " + path
	ctx, cancel, explain := s.bounded(ctx, s.budgets.Operation, op)
	defer cancel()
	ns, id := mesh.SplitPath(path)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return unavailable(op, explain(err)) // nothing was sent
	}
	// Deferred, so a panic in the statement (a user's QueryTracer) still
	// gives the connection back to the pool.
	defer conn.Release()
	_, err = conn.Exec(ctx, `DELETE FROM `+pgx.Identifier{schema, mesh.TableFor(path)}.Sanitize()+
		` WHERE namespace = $1 AND id = $2`, ns, id)
	switch {
	case err == nil:
		return nil
	case missingRelation(err):
		return nil // the schema was never created: nothing to delete
	}
	return unavailable(op, writeOutcome(sentWrite(err), explain))
}
