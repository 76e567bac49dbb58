// Package pgstore keeps a mesh in PostgreSQL: one schema per partition (the
// partition name lower-cased) holding mesh_nodes and the satellite tables
// (access, notifications, threads, activities), all of one shape.
//
// Migrate installs the shared schema: public.searchable_schemas (the
// partition schemas a fan-out may read), public.partition_access, the global
// satellite schema system_access, and the functions that create partition
// schemas. EnsurePartition creates a partition's schema on its first write.
//
// Every node table has a trigger that announces each row change on the
// mesh_node_changes channel as {"path", "op", "node_type"}, so that a
// listener in another process can classify a change by node type instead of
// re-running every query; updates that change nothing visible are not
// announced.
//
// Functions take a DB (a *pgxpool.Pool, *pgx.Conn or pgx.Tx). Schema and
// table names are always quoted as identifiers (pgx.Identifier, or %I in
// SQL), never built from values by concatenation.
package pgstore
