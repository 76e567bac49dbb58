package pgstore

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/mesh/pgstore/internal/sqlgen"
)

// BackfillBatch is how many rows one backfill transaction folds: small
// enough that the row locks it takes are held for milliseconds.
const BackfillBatch = 1000

// backfillLockKey is the advisory lock that lets one backfill run at a
// time on a database ("meshrx" in ASCII, then 3).
const backfillLockKey int64 = 0x6d65736872780003

// BackfillReport says what one BackfillKeys did.
type BackfillReport struct {
	Tables  int   // node tables looked at
	Indexes int   // key indexes built (CONCURRENTLY)
	Rows    int64 // rows whose keys were filled
	// Skipped is true when another backfill held the lock: this one did
	// nothing and the other finishes the work.
	Skipped bool
}

// BackfillKeys finishes migration 0003 on every node table of every node
// schema: it builds the folded-key indexes a table lacks with CREATE INDEX
// CONCURRENTLY (an invalid one, left by an interrupted build, is dropped
// and built again), then fills the keys of the rows that have none, folded
// in Go as sqlgen.KeysOf folds them, BackfillBatch rows per transaction
// (rows a writer holds are skipped and taken by a later batch), and
// VACUUMs a table whose rows it filled. No table is locked against writers
// beyond one batch's rows.
//
// It is idempotent and resumable: it does only what is missing, so it can
// be stopped (ctx) and run again. One backfill runs at a time per
// database; a second finds the lock taken and returns Skipped. Open runs it
// in the background; reads are exact throughout, as a row without keys is
// matched by the spelled-out pattern.
//
// conn must not be in a transaction (CREATE INDEX CONCURRENTLY cannot run
// in one); the backfill's advisory lock is held by its session, which runs
// with SearchPath until BackfillKeys returns (then with its own again).
func BackfillKeys(ctx context.Context, conn *pgx.Conn) (BackfillReport, error) {
	switch {
	case ctx == nil:
		return BackfillReport{}, nilArg("BackfillKeys", "ctx")
	case conn == nil:
		return BackfillReport{}, nilArg("BackfillKeys", "conn")
	}
	var rep BackfillReport
	var got bool
	var callersPath string
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_try_advisory_lock($1), pg_catalog.current_setting('search_path')`,
		backfillLockKey).Scan(&got, &callersPath); err != nil {
		return rep, fmt.Errorf("pgstore: backfilling keys: taking the backfill lock: %w", err)
	}
	if !got {
		rep.Skipped = true
		return rep, nil
	}
	defer func() {
		// The lock and the search_path are the session's; release and
		// restore them even when ctx has ended, or end the session, which
		// releases the lock.
		unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackBudget)
		defer cancel()
		if _, uerr := conn.Exec(unlockCtx, `SELECT pg_catalog.pg_advisory_unlock($1), pg_catalog.set_config('search_path', $2, false)`,
			backfillLockKey, callersPath); uerr != nil {
			_ = conn.Close(unlockCtx)
		}
	}()
	// conn is the caller's: its search_path may put a schema of its own
	// before pg_catalog, whose = would then join every row of a batch to
	// every key row (each row given another row's keys). Set for the
	// session, not per transaction: CREATE INDEX CONCURRENTLY and VACUUM
	// run outside one.
	if _, err := conn.Exec(ctx, `SELECT pg_catalog.set_config('search_path', $1, false)`, SearchPath); err != nil {
		return rep, fmt.Errorf("pgstore: backfilling keys: setting search_path: %w", err)
	}

	tables, err := keyedTables(ctx, conn)
	if err != nil {
		return rep, err
	}
	for _, t := range tables {
		rep.Tables++
		built, err := buildKeyIndexes(ctx, conn, t)
		rep.Indexes += built
		if err != nil {
			return rep, err
		}
		n, err := fillKeys(ctx, conn, t)
		rep.Rows += n
		if err != nil {
			return rep, err
		}
		if n > 0 {
			// Each filled row left its old version, without keys, in the
			// path_key index, where the reads' branch for rows without keys
			// looks: VACUUM clears them (it blocks no reader or writer)
			// and ANALYZE gives the planner the keys' statistics.
			if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) `+pgx.Identifier{t.schema, t.table}.Sanitize()); err != nil {
				return rep, fmt.Errorf("pgstore: backfilling keys: vacuuming %s.%s: %w", t.schema, t.table, err)
			}
		}
	}
	return rep, nil
}

// nodeTable is one node table and the key indexes it has.
type nodeTable struct {
	schema, table string
	valid         map[string]bool // index name -> valid
}

// keyedTables lists the node tables that have key columns, with their
// key indexes.
func keyedTables(ctx context.Context, conn *pgx.Conn) ([]nodeTable, error) {
	rows, err := conn.Query(ctx, `
		SELECT ns.nspname::text, c.relname::text,
		       coalesce(array_agg(i.relname::text ORDER BY i.relname) FILTER (WHERE i.relname IS NOT NULL), '{}'),
		       coalesce(array_agg(x.indisvalid ORDER BY i.relname) FILTER (WHERE i.relname IS NOT NULL), '{}')
		FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace
		JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attname = 'path_key' AND NOT a.attisdropped
		LEFT JOIN pg_catalog.pg_index x ON x.indrelid = c.oid
		LEFT JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid AND i.relname LIKE '%\_key\_idx'
		WHERE c.relkind = 'r' AND c.relname = ANY($1)
		GROUP BY 1, 2 ORDER BY 1, 2`, Tables())
	if err != nil {
		return nil, fmt.Errorf("pgstore: backfilling keys: listing node tables: %w", err)
	}
	var out []nodeTable
	var schema, table string
	var names []string
	var valid []bool
	if _, err := pgx.ForEachRow(rows, []any{&schema, &table, &names, &valid}, func() error {
		t := nodeTable{schema: schema, table: table, valid: map[string]bool{}}
		for i, n := range names {
			t.valid[n] = valid[i]
		}
		out = append(out, t)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("pgstore: backfilling keys: listing node tables: %w", err)
	}
	return out, nil
}

// buildKeyIndexes builds the key indexes t lacks, CONCURRENTLY (which
// cannot run in a transaction: each is its own statement).
func buildKeyIndexes(ctx context.Context, conn *pgx.Conn, t nodeTable) (int, error) {
	rows, err := conn.Query(ctx, `SELECT suffix, columns FROM public.mesh_key_indexes()`)
	if err != nil {
		return 0, fmt.Errorf("pgstore: backfilling keys: %w", err)
	}
	var suffix, columns string
	type index struct{ name, columns string }
	var want []index
	if _, err := pgx.ForEachRow(rows, []any{&suffix, &columns}, func() error {
		want = append(want, index{t.table + suffix, columns})
		return nil
	}); err != nil {
		return 0, fmt.Errorf("pgstore: backfilling keys: %w", err)
	}
	built := 0
	for _, ix := range want {
		valid, exists := t.valid[ix.name]
		if exists && valid {
			continue
		}
		if exists { // left invalid by an interrupted build
			if _, err := conn.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+pgx.Identifier{t.schema, ix.name}.Sanitize()); err != nil {
				return built, fmt.Errorf("pgstore: backfilling keys: dropping the invalid index %s.%s: %w", t.schema, ix.name, err)
			}
		}
		// columns comes from the migration's own list, never from input.
		if _, err := conn.Exec(ctx, `CREATE INDEX CONCURRENTLY IF NOT EXISTS `+pgx.Identifier{ix.name}.Sanitize()+
			` ON `+pgx.Identifier{t.schema, t.table}.Sanitize()+` (`+ix.columns+`)`); err != nil {
			return built, fmt.Errorf("pgstore: backfilling keys: building index %s.%s: %w", t.schema, ix.name, err)
		}
		built++
	}
	return built, nil
}

// fillKeys fills the keys of t's rows that have none, one batch per
// transaction, until none is left.
func fillKeys(ctx context.Context, conn *pgx.Conn, t nodeTable) (int64, error) {
	table := pgx.Identifier{t.schema, t.table}.Sanitize()
	var total int64
	for {
		var n int64
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT namespace, id, coalesce(name, ''), coalesce(node_type, ''), coalesce(main_node, '')
				FROM `+table+` WHERE path_key IS NULL LIMIT $1 FOR UPDATE SKIP LOCKED`, BackfillBatch)
			if err != nil {
				return err
			}
			cols := make([][]string, 8) // namespace, id, then the six keys
			var ns, id, name, typ, main string
			if _, err := pgx.ForEachRow(rows, []any{&ns, &id, &name, &typ, &main}, func() error {
				k := sqlgen.KeysOf(ns, id, name, typ, main)
				for i, v := range []string{ns, id, k.Namespace, k.ID, k.Path, k.Name, k.NodeType, k.MainNode} {
					cols[i] = append(cols[i], v)
				}
				return nil
			}); err != nil {
				return err
			}
			if len(cols[0]) == 0 {
				return nil
			}
			tag, err := tx.Exec(ctx, `UPDATE `+table+` AS t SET ns_key = k.ns_key, id_key = k.id_key, path_key = k.path_key,
					name_key = k.name_key, type_key = k.type_key, main_key = k.main_key
				FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
					AS k(namespace, id, ns_key, id_key, path_key, name_key, type_key, main_key)
				WHERE t.namespace = k.namespace AND t.id = k.id`,
				cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7])
			n = tag.RowsAffected()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("pgstore: backfilling keys of %s.%s: %w", t.schema, t.table, err)
		}
		total += n
		if n == 0 {
			return total, nil
		}
	}
}

// backfillBudget bounds the background backfill Open starts; a database
// too large for it is finished by a later Open or by BackfillKeys.
const backfillBudget = 6 * time.Hour

// backfillAppName is the application_name of the background backfill's
// connection.
const backfillAppName = "meshrx-pgstore-backfill"

// backfillInBackground runs BackfillKeys on a store goroutine, ended by
// Close, and logs what it did.
func (s *Store) backfillInBackground() {
	s.start(func() {
		ctx, cancel, explain := s.bounded(s.ctx, backfillBudget, "backfilling the folded keys")
		defer cancel()
		conn, err := pgx.ConnectConfig(ctx, s.backfillConfig())
		switch {
		case err != nil && s.ctx.Err() != nil:
			// Close began while it connected: a shutdown, not a warning.
			s.log.Info("pgstore: key backfill stopped by Close before it started; the next Open resumes it")
			return
		case err != nil:
			s.log.Warn("pgstore: key backfill could not connect; reads stay exact, the next Open resumes it", "err", explain(err))
			return
		}
		defer s.closeConn(conn)
		rep, err := BackfillKeys(ctx, conn)
		switch {
		case err != nil && s.ctx.Err() != nil:
			// Whatever the driver made of the cancellation, Close ended it.
			s.log.Info("pgstore: key backfill stopped by Close; the next Open resumes it", "rows", rep.Rows)
		case err != nil:
			s.log.Warn("pgstore: key backfill failed; reads stay exact, the next Open resumes it", "err", explain(err), "rows", rep.Rows)
		case rep.Rows > 0 || rep.Indexes > 0:
			s.log.Info("pgstore: folded keys backfilled", "tables", rep.Tables, "indexes", rep.Indexes, "rows", rep.Rows)
		}
	})
}

// backfillConfig is the listener's connection settings without its read
// stamps: the backfill's reads must not count as the listener's connection
// being alive (its silence check reads the stamps).
func (s *Store) backfillConfig() *pgx.ConnConfig {
	cfg := s.listenCfg.Copy()
	cfg.RuntimeParams["application_name"] = backfillAppName
	stamped := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := stamped(ctx, network, addr)
		if sc, ok := c.(*stampedConn); ok {
			return sc.Conn, err
		}
		return c, err
	}
	return cfg
}
