// Package pgstore keeps a mesh in PostgreSQL: one schema per partition (the
// partition name lower-cased) holding mesh_nodes and the satellite tables
// (access, notifications, threads, activities), all of one shape.
//
// # The store
//
// Open returns a Store, a mesh.Store and mesh.SecurityReader that passes
// the conformance suite mesh/meshtest:
//
//	s, err := pgstore.Open(ctx, "postgres://…/mesh", pgstore.Options{})
//	defer s.Close()
//	s.Put(ctx, mesh.Node{Path: "acme/Docs/intro", NodeType: "Article"})
//	first, err := rx.First(ctx, s.Query("namespace:acme/Docs nodeType:Article"))
//
// Writes create a partition's schema on its first write and bump a node's
// version only when something visible changed, decided by the database in
// the upsert itself. A pinned query reads one schema; a fan-out reads every
// schema it covers in one UNION ALL statement and is logged with its shape.
// An unroutable query answers empty without a statement.
//
// # Reads that indexes serve
//
// Each node table holds, beside namespace, id, path, name, node type and
// main node, the field folded as mesh folds it for matching (computed in
// Go by Put), collated "C" and indexed. A query's equalities, in-lists and
// prefix globs on those fields become equalities and ranges on the keys,
// so a pinned read costs the same on a partition of a thousand nodes and
// of a million. Rows written before migration 0003 (or by a writer that
// does not set keys) are still read exactly, by regular expressions, until
// BackfillKeys folds them: Open runs it in the background, in batches, and
// builds missing key indexes CONCURRENTLY.
//
// A query whose node types are known reads only the tables those types
// have been stored in (public.mesh_table_types, kept by a trigger and
// learned from the change feed): nodeType:Item partitions:all reads the
// mesh_nodes table of each partition, not all five of its tables. The
// routing a process has cached may lag another process's write of a type
// into a new table (its change notice not yet arrived): so a typed read
// counts public.mesh_table_types in the same round trip, before its rows,
// and reloads the routing and reads again when the registry has grown. A
// read sees every node committed before it started, whichever process
// wrote it.
//
// # The change feed
//
// Every node table has a trigger that announces each row change on the
// mesh_node_changes channel as {"path", "op", "node_type", "n"} (node_type
// null when a write changes it; n a number of the notice's own, so that
// PostgreSQL folds no two notices together), with the written row as "row"
// when the payload stays under 7,900 bytes, so that a listener in another process can
// classify a change by node type instead of re-running every query; updates
// that change nothing visible are not announced. Each Store listens on one
// connection of its own: its own writes and those of every other process on
// the database (its replicas) arrive the same way. A notice concerns only
// the live queries that read its schema and table, whose anchor holds its
// path and whose node types include its type (without a type, any type
// does); the listener finds them through an index of the live queries by
// schema, node type and anchor, so a notice costs the same among 100 live
// queries or 100,000. Each of those patches its result with the notice's
// row, or re-reads the written path (or, for a query with a limit, its
// whole result), and sends what changed. A row is believed only from a
// backend of the store's own role (any role can NOTIFY) and only after the
// query's fence: a NOTIFY the query sends on the store's own channel after
// each of its reads, before sending what it read, so that no notice older
// than the read's snapshot can take its result back. After the listener
// reconnects every live query gets a Reset, never a silent gap. A listener
// connection that has read nothing for Options.FeedCheck (one timer on the
// store's clock per connection, not one per notice) is pinged, and one that does not
// answer within Budgets.QueryInitial is dropped and reconnected: a
// connection lost without a FIN or RST does not leave Feed saying Connected.
//
// # The security fold
//
// public.security_fold holds a copy of every node whose type is a security
// type (a type listed in public.security_fold_types: the Options.GatedTypes
// of every store opened on the database),
// from every node table of every schema, maintained by triggers in the
// writing transaction, with a version bumped by the same transaction.
// SecurityNodes reads it in one statement: never paged, never narrowed.
//
// # Schema
//
// Migrate installs the shared schema: public.searchable_schemas (the
// partition schemas a fan-out may read), public.partition_access, the global
// satellite schema system_access, the fold, and the functions that create
// partition and global satellite schemas (EnsurePartition,
// EnsureGlobalSchema).
//
// Functions take a DB (a *pgxpool.Pool, *pgx.Conn or pgx.Tx). Schema and
// table names are always quoted as identifiers (pgx.Identifier, or %I in
// SQL), never built from values by concatenation. Every SQL function the
// migrations create (the triggers among them) runs with search_path =
// pg_catalog, pg_temp and names the store's objects with their schema, so
// a writing session's search_path cannot redirect them (migration 0008;
// a later migration that redefines one must keep the setting), but for
// two per-row SQL functions whose bodies qualify every name instead, so
// that no call pays for saving and restoring the setting (and
// mesh_fold_ascii can be inlined). The store's own connections, and Migrate and
// BackfillKeys on a caller's connection, run with the same search_path
// (SearchPath) unless the URL names one: a role's or database's default
// is not used.
//
// Migrate waits at most LockBudget for the migration lock and at most
// TableLockBudget for each lock on a table, as does Open adding gated
// types: both take ACCESS EXCLUSIVE locks, and every reader and writer of
// the table queues behind such a request while it waits, so a long
// transaction holding a store table makes them fail with a
// *LockTimeoutError (rolled back, to be run again) instead of stalling the
// store's writers behind it.
//
// # Connecting and migrating
//
// Open takes a postgres:// URL or a key=value connection string, as libpq
// does. sslmode is read from it: sslmode=disable for a local server without
// TLS, sslmode=verify-full (with sslrootcert) across a network, which
// encrypts and authenticates the server. Without one, pgx tries TLS and
// falls back to plain text (prefer): that encrypts when it can but
// authenticates nothing, so name verify-full in production. A server that
// cannot be reached is a *mesh.UnavailableError (mesh.IsUnavailable) whose
// message says what to check; one that answers and refuses (a password, a
// missing database) is not unavailable.
//
// Open migrates by default. A deploy pipeline that migrates first runs
// MigrateURL (migrations and the key backfill, with a role allowed to change
// the schema) and starts services with Options.SkipMigrate, which change no
// schema and refuse a database that lacks a migration (CheckMigrated).
//
// # Logging
//
// Every *slog.Logger option of this package (Options.Logger) may be nil, which
// means slog.Default(): nothing is discarded unless the caller says so.
//
// # Examples
//
// Example and ExampleMigrateURL (example_test.go) are worked examples,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./mesh/pgstore/.
package pgstore
