package pgstore

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/meshrx/meshrx/mesh"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Names fixed by the schema.
const (
	// NotifyChannel is the channel every node table's trigger notifies with a
	// JSON payload {"path": ..., "op": "INSERT"|"UPDATE"|"DELETE", "node_type": ...}.
	NotifyChannel = "mesh_node_changes"
	// NodesTable holds a partition's nodes that are not satellites.
	NodesTable = "mesh_nodes"
	// GlobalAccessSchema holds the global _Access satellite; it is never a
	// partition and never searched by a fan-out.
	GlobalAccessSchema = "system_access"
	// MaxSchemaNameLen is PostgreSQL's identifier limit in bytes; a longer
	// name would be silently truncated, letting two partitions collide.
	MaxSchemaNameLen = 63
)

// LockBudget bounds each wait for one of pgstore's advisory locks (the
// migration lock, a partition's creation lock).
const LockBudget = 30 * time.Second

// TableLockBudget bounds each wait of pgstore's schema changes (Migrate's
// statements, Open's adding of gated types) for a lock on a table: they
// take ACCESS EXCLUSIVE locks on the store's tables. It is short, and
// shorter than LockBudget: while such a request waits, every later reader
// and writer of the table queues behind it (every write's triggers read
// public.security_fold_types), so a long transaction holding the table
// would otherwise stall the store's writers for as long as it runs. A
// change that runs out of it is rolled back whole and can be run again.
const TableLockBudget = 5 * time.Second

// Tables returns the node tables every partition schema (and
// GlobalAccessSchema) has: NodesTable, then the satellite tables.
func Tables() []string {
	return []string{NodesTable, "access", "notifications", "threads", "activities"}
}

// migrationLockKey is the advisory lock serialising migrators ("meshrx" in
// ASCII, then 1).
const migrationLockKey int64 = 0x6d65736872780001

// DB is what Migrate and EnsurePartition need: *pgxpool.Pool, *pgx.Conn and
// pgx.Tx all satisfy it. Each call runs in a transaction of its own (a
// savepoint when db is a pgx.Tx).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// PartitionNameError reports a partition name that cannot be a schema.
type PartitionNameError struct {
	Partition string // as given
	Reason    string
}

func (e *PartitionNameError) Error() string {
	return fmt.Sprintf("pgstore: partition %q cannot be stored: %s", e.Partition, e.Reason)
}

// LockTimeoutError reports that a lock pgstore waited for was not granted
// in time: one of its advisory locks within LockBudget, or a table lock of
// a schema change within TableLockBudget. Lock says which.
type LockTimeoutError struct {
	Lock  string // what the lock guards
	After time.Duration
	Err   error
}

func (e *LockTimeoutError) Error() string {
	return fmt.Sprintf("pgstore: waited %s for the %s and did not get it: %v", e.After, e.Lock, e.Err)
}

func (e *LockTimeoutError) Unwrap() error { return e.Err }

// MigrationChangedError reports that an applied migration's file differs
// from what was applied: the database and this build disagree about the
// schema, and guessing would lose data.
type MigrationChangedError struct {
	Name            string
	Applied, ByFile string // SHA-256 of the SQL, hex
}

func (e *MigrationChangedError) Error() string {
	return fmt.Sprintf("pgstore: migration %s was applied with checksum %s but the file now has %s; "+
		"add a new migration instead of editing an applied one", e.Name, e.Applied, e.ByFile)
}

// ErrNotMigrated is wrapped by EnsurePartition's error when the database
// lacks pgstore's schema.
var ErrNotMigrated = errors.New("pgstore: the database is not migrated (run Migrate first)")

// SchemaName returns the schema of a partition: its name lower-cased (ASCII
// only: a partition name that is not ASCII is refused). It
// fails with a *PartitionNameError for a name that cannot be a partition
// schema: empty, not UTF-8, containing '/' or NUL, longer than
// MaxSchemaNameLen bytes once lower-cased, starting with '_' (a global
// satellite) or "pg_" (reserved by PostgreSQL), or one of public,
// information_schema and GlobalAccessSchema.
func SchemaName(partition string) (string, error) {
	bad := func(reason string) (string, error) {
		return "", &PartitionNameError{Partition: partition, Reason: reason}
	}
	switch {
	case partition == "":
		return bad("the name is empty")
	case !utf8.ValidString(partition):
		return bad("the name is not valid UTF-8")
	case strings.ContainsRune(partition, 0):
		return bad("the name contains a NUL byte")
	case !isASCII(partition):
		return bad("the name is not ASCII; partition names are ASCII, compared with ASCII case folding (mesh.FoldName)")
	case strings.Contains(partition, "/"):
		return bad("a partition is one path segment and cannot contain '/'")
	case strings.HasPrefix(partition, "_"):
		return bad("a name starting with '_' is a global satellite, routed through its registry, not a partition")
	}
	if why := mesh.PartitionNameProblem(partition); why != "" {
		return bad(why) // the rule every store keeps
	}
	schema := mesh.FoldName(partition)
	if schema == GlobalAccessSchema {
		return bad("the name belongs to a schema that is not a partition")
	}
	return schema, nil
}

// EnsurePartition creates the schema of a partition, with its node tables,
// indexes and notify triggers, unless it exists, registers it in
// public.searchable_schemas, and returns the schema name. It is meant for the
// first write to a partition; concurrent calls for one partition create it
// once and all succeed.
func EnsurePartition(ctx context.Context, db DB, partition string) (schema string, err error) {
	if err := ctxDB("EnsurePartition", ctx, db); err != nil {
		return "", err
	}
	schema, err = SchemaName(partition)
	if err != nil {
		return "", err
	}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT public.ensure_partition_schema($1, $2)`, schema, LockBudget)
		return err
	})
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return schema, nil
	case errors.As(err, &pgErr) && pgErr.Code == "42883": // undefined_function
		return "", fmt.Errorf("pgstore: creating partition schema %q: %w: %w", schema, ErrNotMigrated, err)
	case errors.As(err, &pgErr) && pgErr.Code == "55P03": // lock_not_available
		return "", &LockTimeoutError{Lock: fmt.Sprintf("creation lock of partition schema %q", schema), After: LockBudget, Err: err}
	}
	return "", fmt.Errorf("pgstore: creating partition schema %q: %w", schema, err)
}

// EnsureGlobalSchema creates the schema of a global satellite (a first path
// segment starting with _, such as _Access → GlobalAccessSchema) with the
// node tables, indexes and triggers of a partition, unless it exists. It is
// not registered as searchable: no fan-out reads it. schema is used as
// given (the router lower-cases it); a name that cannot be a schema is a
// *PartitionNameError.
func EnsureGlobalSchema(ctx context.Context, db DB, schema string) error {
	if err := ctxDB("EnsureGlobalSchema", ctx, db); err != nil {
		return err
	}
	bad := func(reason string) error { return &PartitionNameError{Partition: schema, Reason: reason} }
	switch {
	case schema == "" || !utf8.ValidString(schema) || strings.ContainsRune(schema, 0):
		return bad("a global satellite schema needs a non-empty UTF-8 name without NUL")
	case len(schema) > MaxSchemaNameLen:
		return bad(fmt.Sprintf("the name is %d bytes; schema names are limited to %d", len(schema), MaxSchemaNameLen))
	case strings.Contains(schema, "/") || strings.HasPrefix(schema, "pg_") || schema == "public" || schema == "information_schema":
		return bad("the name is reserved or not one identifier")
	}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT public.ensure_global_schema($1, $2)`, schema, LockBudget)
		return err
	})
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pgErr) && pgErr.Code == "42883": // undefined_function
		return fmt.Errorf("pgstore: creating global satellite schema %q: %w: %w", schema, ErrNotMigrated, err)
	case errors.As(err, &pgErr) && pgErr.Code == "55P03": // lock_not_available
		return &LockTimeoutError{Lock: fmt.Sprintf("creation lock of global satellite schema %q", schema), After: LockBudget, Err: err}
	}
	return fmt.Errorf("pgstore: creating global satellite schema %q: %w", schema, err)
}

// Migrate brings the database to this build's schema by applying, in name
// order, the embedded migrations it has not applied yet, each recorded in
// public.meshrx_migrations with its checksum. Running it again changes
// nothing. Concurrent migrators (replicas starting together) are serialised
// by an advisory lock, waited for at most LockBudget; each wait for a lock
// on a table is bounded by TableLockBudget. Either running out is a
// *LockTimeoutError naming what was waited on, and changes nothing. The
// caller's lock_timeout is as it was when Migrate returns.
func Migrate(ctx context.Context, db DB) error {
	if err := ctxDB("Migrate", ctx, db); err != nil {
		return err
	}
	return migrate(ctx, db, TableLockBudget)
}

// migrate is Migrate with each table lock wait bounded by tableBudget
// (lock_timeout; 0 waits without bound).
func migrate(ctx context.Context, db DB, tableBudget time.Duration) error {
	migrations, err := loadMigrations()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var previous, previousPath string
		if err := tx.QueryRow(ctx, `SELECT pg_catalog.current_setting('lock_timeout'), pg_catalog.current_setting('search_path')`).Scan(&previous, &previousPath); err != nil {
			return fmt.Errorf("pgstore: reading lock_timeout and search_path: %w", err)
		}
		// What a migration binds outside a function body (a CHECK's
		// operator, a column default, a generated column) is resolved once,
		// through the migrating session's search_path: on a connection of
		// the caller's, whose path may put a schema of its own first, it
		// must be SearchPath too.
		if err := setLocal(ctx, tx, "search_path", SearchPath); err != nil {
			return err
		}
		if err := lockMigrations(ctx, tx); err != nil {
			return err
		}
		if err := setLocal(ctx, tx, "lock_timeout", fmt.Sprint(tableBudget.Milliseconds())); err != nil {
			return err
		}
		tableLock := func(what string, err error) error {
			if pgCode(err) == "55P03" { // lock_not_available
				return &LockTimeoutError{Lock: what, After: tableBudget, Err: err}
			}
			return nil
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS public.meshrx_migrations (
			name       TEXT PRIMARY KEY,
			checksum   TEXT NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
		)`); err != nil {
			if lockErr := tableLock(migrationsTableLock+" (creating it)", err); lockErr != nil {
				return lockErr
			}
			return fmt.Errorf("pgstore: creating the migrations table: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT name, checksum FROM public.meshrx_migrations`)
		if err != nil {
			if lockErr := tableLock(migrationsTableLock+" (reading the applied migrations)", err); lockErr != nil {
				return lockErr
			}
			return fmt.Errorf("pgstore: reading applied migrations: %w", err)
		}
		applied := map[string]string{}
		var name, sum string
		if _, err := pgx.ForEachRow(rows, []any{&name, &sum}, func() error {
			applied[name] = sum
			return nil
		}); err != nil {
			return fmt.Errorf("pgstore: reading applied migrations: %w", err)
		}
		for _, m := range migrations {
			if sum, ok := applied[m.name]; ok {
				if sum != m.checksum {
					return &MigrationChangedError{Name: m.name, Applied: sum, ByFile: m.checksum}
				}
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				// The statement's text is in the PgError's Where when a
				// function took the lock; pg_locks names the holder.
				if lockErr := tableLock(fmt.Sprintf("table locks of migration %s (another transaction holds a lock on a store table)", m.name), err); lockErr != nil {
					return lockErr
				}
				return fmt.Errorf("pgstore: applying migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO public.meshrx_migrations (name, checksum) VALUES ($1, $2)`,
				m.name, m.checksum); err != nil {
				if lockErr := tableLock(fmt.Sprintf("%s (recording migration %s)", migrationsTableLock, m.name), err); lockErr != nil {
					return lockErr
				}
				return fmt.Errorf("pgstore: recording migration %s: %w", m.name, err)
			}
		}
		// A transaction's end restores the caller's setting, a savepoint's
		// release (db a pgx.Tx) does not.
		if err := setLocal(ctx, tx, "search_path", previousPath); err != nil {
			return err
		}
		return setLocal(ctx, tx, "lock_timeout", previous)
	})
}

// migrationsTableLock is what Migrate waits for when another transaction
// holds a lock on its bookkeeping table (an ALTER, a LOCK TABLE, an index
// build): named in its *LockTimeoutError with what it was doing.
const migrationsTableLock = "lock on public.meshrx_migrations"

// lockMigrations takes the migration lock, waiting at most LockBudget
// (lock_timeout, left set: the caller sets its own next).
func lockMigrations(ctx context.Context, tx pgx.Tx) error {
	if err := setLocal(ctx, tx, "lock_timeout", fmt.Sprint(LockBudget.Milliseconds())); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
			return &LockTimeoutError{Lock: "migration lock", After: LockBudget, Err: err}
		}
		return fmt.Errorf("pgstore: waiting for the migration lock: %w", err)
	}
	return nil
}

// setLocal sets a setting for the rest of tx (value as current_setting
// gives it; a lock_timeout may be given in milliseconds).
func setLocal(ctx context.Context, tx pgx.Tx, setting, value string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_catalog.set_config($1, $2, true)`, setting, value); err != nil {
		return fmt.Errorf("pgstore: setting %s: %w", setting, err)
	}
	return nil
}

type migration struct {
	name, sql, checksum string
}

func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("pgstore: listing migrations: %w", err)
	}
	slices.Sort(names)
	migrations := make([]migration, 0, len(names))
	for _, name := range names {
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("pgstore: reading migration %s: %w", name, err)
		}
		sum := sha256.Sum256(b)
		migrations = append(migrations, migration{name: path.Base(name), sql: string(b), checksum: hex.EncodeToString(sum[:])})
	}
	return migrations, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
