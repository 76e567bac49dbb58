package pgstore

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/mesh/pgstore/internal/sqlgen"
)

// schemaSet is what a Store knows of the database's node schemas: the
// partition schemas (those in public.searchable_schemas) and every node
// schema known to exist (partitions and global satellite schemas). It is
// loaded at Open and after each listener reconnect, and grows with the
// store's own schema creation and with every change notice (a notice comes
// from a table, so its schema exists). Schemas are never dropped by the
// store, so it only grows; no query waits on a refresh.
//
// It also knows which node types each node table (by name, in any schema)
// has held, from public.mesh_table_types (migration 0003), folded as mesh
// folds them: a query whose node types are known reads only the tables
// that can hold them. That too only grows: a notice names the table (by
// its path) and the type of a row just written, before the re-reads it
// causes; a notice without a type (a type change, or a row without one)
// makes the next type-routed read reload the registry first.
type schemaSet struct {
	mu         sync.RWMutex
	partitions map[string]bool
	exists     map[string]bool
	types      map[string]map[string]bool // table -> folded node types it has held
	typesStale bool
	// typesLoaded is how many rows public.mesh_table_types held at the
	// last loadTypes: the registry only grows, so a read that counts as
	// many (before reading its rows) was routed by a complete registry.
	typesLoaded int64
	sorted      []string // partitions, sorted; nil when it must be rebuilt
}

func newSchemaSet() *schemaSet {
	return &schemaSet{partitions: map[string]bool{}, exists: map[string]bool{}, types: map[string]map[string]bool{}}
}

type querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

// loadTypes merges in the registry of node types per table.
func (s *schemaSet) loadTypes(ctx context.Context, db querier) error {
	s.mu.Lock()
	s.typesStale = false // a notice from now on marks it again
	s.mu.Unlock()
	rows, err := db.Query(ctx, "-- routing: node types per table\nSELECT table_name, node_type FROM public.mesh_table_types")
	if err != nil {
		s.markTypesStale()
		return err
	}
	var table, typ string
	found := map[[2]string]bool{}
	if _, err := pgx.ForEachRow(rows, []any{&table, &typ}, func() error {
		found[[2]string{table, typ}] = true
		return nil
	}); err != nil {
		s.markTypesStale()
		return err
	}
	for tt := range found {
		s.addType(tt[0], tt[1])
	}
	s.mu.Lock()
	s.typesLoaded = max(s.typesLoaded, int64(len(found)))
	s.mu.Unlock()
	return nil
}

// loadedTypes is how many registry rows the last loadTypes read.
func (s *schemaSet) loadedTypes() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.typesLoaded
}

// addType records that table has held a node of nodeType (as written).
func (s *schemaSet) addType(table, nodeType string) {
	key := sqlgen.Fold(nodeType)
	s.mu.RLock()
	known := s.types[table][key]
	s.mu.RUnlock()
	if known {
		return
	}
	s.mu.Lock()
	if s.types[table] == nil {
		s.types[table] = map[string]bool{}
	}
	s.types[table][key] = true
	s.mu.Unlock()
}

func (s *schemaSet) markTypesStale() {
	s.mu.Lock()
	s.typesStale = true
	s.mu.Unlock()
}

// holding returns those of tables that have held a node of one of types
// (folded), in their order, and whether the registry must be reloaded
// first.
func (s *schemaSet) holding(tables, types []string) (out []string, stale bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.typesStale {
		return nil, true
	}
	for _, t := range tables {
		for _, typ := range types {
			if s.types[t][sqlgen.Fold(typ)] {
				out = append(out, t)
				break
			}
		}
	}
	return out, false
}

// load merges in the node schemas of the database, and the node types
// their tables have held.
func (s *schemaSet) load(ctx context.Context, db querier) error {
	rows, err := db.Query(ctx, `
		SELECT ns.nspname::text,
		       EXISTS (SELECT 1 FROM public.searchable_schemas s WHERE s.schema_name = ns.nspname)
		FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace
		WHERE c.relname = 'mesh_nodes' AND c.relkind = 'r'`)
	if err != nil {
		return err
	}
	var name string
	var searchable bool
	found := map[string]bool{}
	if _, err := pgx.ForEachRow(rows, []any{&name, &searchable}, func() error {
		found[name] = searchable
		return nil
	}); err != nil {
		return err
	}
	s.mu.Lock()
	for name, searchable := range found {
		s.exists[name] = true
		if searchable && !s.partitions[name] {
			s.partitions[name], s.sorted = true, nil
		}
	}
	s.mu.Unlock()
	return s.loadTypes(ctx, db)
}

func (s *schemaSet) addPartition(schema string) {
	s.mu.RLock()
	known := s.partitions[schema]
	s.mu.RUnlock()
	if known {
		return
	}
	s.mu.Lock()
	if !s.partitions[schema] {
		s.partitions[schema], s.exists[schema], s.sorted = true, true, nil
	}
	s.mu.Unlock()
}

func (s *schemaSet) addGlobal(schema string) {
	s.mu.Lock()
	s.exists[schema] = true
	s.mu.Unlock()
}

// forget drops a schema found missing after all (dropped by hand).
func (s *schemaSet) forget(schema string) {
	s.mu.Lock()
	delete(s.partitions, schema)
	delete(s.exists, schema)
	s.sorted = nil
	s.mu.Unlock()
}

func (s *schemaSet) has(schema string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.exists[schema]
}

func (s *schemaSet) isPartition(schema string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.partitions[schema]
}

// partitionList returns the partition schemas, sorted: a copy of a list
// sorted once per change of the set, as every query asks for it.
func (s *schemaSet) partitionList() []string {
	s.mu.RLock()
	sorted := s.sorted
	s.mu.RUnlock()
	if sorted == nil {
		s.mu.Lock()
		if s.sorted == nil {
			s.sorted = slices.Sorted(maps.Keys(s.partitions))
		}
		sorted = s.sorted
		s.mu.Unlock()
	}
	return slices.Clone(sorted)
}

// existing returns those of schemas that exist, in their order.
func (s *schemaSet) existing(schemas []string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(schemas))
	for _, sc := range schemas {
		if s.exists[sc] {
			out = append(out, sc)
		}
	}
	return out
}
