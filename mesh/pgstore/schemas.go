package pgstore

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
)

// schemaSet is what a Store knows of the database's node schemas: the
// partition schemas (those in public.searchable_schemas) and every node
// schema known to exist (partitions and global satellite schemas). It is
// loaded at Open and after each listener reconnect, and grows with the
// store's own schema creation and with every change notice (a notice comes
// from a table, so its schema exists). Schemas are never dropped by the
// store, so it only grows; no query waits on a refresh.
type schemaSet struct {
	mu         sync.RWMutex
	partitions map[string]bool
	exists     map[string]bool
}

func newSchemaSet() *schemaSet {
	return &schemaSet{partitions: map[string]bool{}, exists: map[string]bool{}}
}

// load merges in the node schemas of the database.
func (s *schemaSet) load(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) error {
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
	defer s.mu.Unlock()
	for name, searchable := range found {
		s.exists[name] = true
		if searchable {
			s.partitions[name] = true
		}
	}
	return nil
}

func (s *schemaSet) addPartition(schema string) {
	s.mu.Lock()
	s.partitions[schema], s.exists[schema] = true, true
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

// partitionList returns the partition schemas, sorted.
func (s *schemaSet) partitionList() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.partitions))
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
