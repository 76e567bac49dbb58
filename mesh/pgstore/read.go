package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore/internal/sqlgen"
	"github.com/meshrx/meshrx/rx"
)

// Get reads the node at exactly path: the node then completion when it is
// present, completion alone when it is absent (including under a path no
// schema can hold), and a *mesh.UnavailableError when the database could
// not answer within Budgets.QueryInitial — never "absent" for "could not
// find out". An invalid path fails with *mesh.PathError.
func (s *Store) Get(path string) rx.Observable[mesh.Node] {
	if err := s.usable("Get", nil, false); err != nil {
		return rx.Throw[mesh.Node](err)
	}
	if err := mesh.ValidatePath(path); err != nil {
		return rx.Throw[mesh.Node](err)
	}
	return rx.Create(func(ctx context.Context, o rx.Observer[mesh.Node]) {
		op := "read " + path
		started := s.start(func() {
			ctx, stop := s.scoped(ctx)
			defer stop()
			n, ok, err := s.getRetrying(ctx, path)
			switch {
			case err != nil && s.ctx.Err() != nil:
				o.OnError(unavailable(op, ErrClosed))
			case err != nil:
				o.OnError(unavailable(op, err))
			case ok:
				o.OnNext(n)
				o.OnCompleted()
			default:
				o.OnCompleted()
			}
		})
		if !started {
			o.OnError(unavailable(op, ErrClosed))
		}
	})
}

// scoped returns ctx ended also by Close.
func (s *Store) scoped(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (s *Store) get(ctx context.Context, path string) (mesh.Node, bool, error) {
	schema, _, err := s.schemaFor(path)
	if err != nil {
		if isUnroutable(err) {
			return mesh.Node{}, false, nil
		}
		return mesh.Node{}, false, err
	}
	ctx, cancel, explain := s.bounded(ctx, s.budgets.QueryInitial, "reading "+path)
	defer cancel()
	ns, id := mesh.SplitPath(path)
	n, err := scanNode(s.pool.QueryRow(ctx, `SELECT `+nodeColumns+` FROM `+
		pgx.Identifier{schema, mesh.TableFor(path)}.Sanitize()+` WHERE namespace = $1 AND id = $2`, ns, id))
	switch {
	case err == nil:
		return n, true, nil
	case errors.Is(err, pgx.ErrNoRows), missingRelation(err):
		return mesh.Node{}, false, nil
	}
	return mesh.Node{}, false, explain(err)
}

// Query parses q, routes it over the partition schemas the store knows and
// returns its live result, merged with Options.Providers by mesh.FanIn (see
// mesh.Querier): an Initial with the full result, then Added, Updated and
// Removed frames as writes land anywhere on the database, and a Reset after
// the listener reconnects. A query that does not parse fails with
// *mesh.ParseError; one the router refuses with *mesh.UnanchoredQueryError;
// an unroutable one answers an empty Initial and completes without touching
// the database. A read the database cannot answer ends the query with
// *mesh.UnavailableError. Close completes every live query.
//
// The store's frames are already what a fan-in would make of them (its
// read is bounded by QueryInitial, deduplicated, ordered and limited, and
// its live frames say Added, Updated or Removed against its own result), so
// with no Options.Providers there is no fan-in (measured by
// BenchmarkPinnedInitial).
func (s *Store) Query(q string) rx.Observable[mesh.Change] {
	if err := s.usable("Query", nil, false); err != nil {
		return rx.Throw[mesh.Change](err)
	}
	return s.querier.Query(q)
}

// backend is the store's mesh.Backend: its partitions and live reads.
type backend struct{ s *Store }

func (b backend) Name() string { return providerName }

func (b backend) Partitions(q *mesh.Query) ([]string, error) {
	if b.s.isClosed() {
		return nil, unavailable("query "+q.String(), ErrClosed)
	}
	return b.s.schemas.partitionList(), nil
}

func (b backend) Watch(q *mesh.Query, reach mesh.Reach) rx.Observable[mesh.Change] {
	p := planFor(q, reach)
	return rx.Create(func(ctx context.Context, o rx.Observer[mesh.Change]) {
		b.s.runLive(ctx, newLiveQuery(q, p), o)
	})
}

// plan is how the store reads one subscription of a query.
type plan struct {
	fanOut    bool     // the route is a fan-out: reads are logged
	shape     string   // mesh.DescribeShape of the query
	schemas   []string // fixed schemas to read (when !anySchema)
	anySchema bool     // read every partition schema, as known at each read
	tables    []string // node tables the anchor allows in each schema
	// types, when typed, are the only node types the query can match: of
	// tables, each read reads those that have held one of them.
	types []string
	typed bool
}

func planFor(q *mesh.Query, reach mesh.Reach) plan {
	p := plan{shape: reach.Route.Shape, fanOut: reach.Route.Kind == mesh.FanOut, tables: tablesFor(q),
		schemas: reach.Schemas, anySchema: reach.AllPartitions}
	p.types, p.typed = q.NodeTypes()
	return p
}

// tablesFor returns the node tables that can hold a node q selects, in
// Tables order: the satellite table an anchor lies in, mesh_nodes for exact
// and children reads of an ordinary path, every table below an ordinary
// path or without an anchor.
func tablesFor(q *mesh.Query) []string {
	anchors := q.Paths
	if len(anchors) == 0 {
		if q.Path == "" {
			return Tables()
		}
		anchors = []string{q.Path}
	}
	need := map[string]bool{}
	for _, a := range anchors {
		t := mesh.TableFor(a)
		if star := strings.IndexByte(a, '*'); star >= 0 {
			// A star runs over '/', so the glob may reach a satellite
			// segment it does not spell; only a whole one before the
			// first star fixes the table.
			t = mesh.TableFor(a[:strings.LastIndexByte(a[:star], '/')+1])
			if t == mesh.NodesTable {
				return Tables()
			}
		}
		switch {
		case t != mesh.NodesTable && q.Scope != mesh.ScopeAncestors && q.Scope != mesh.ScopeHierarchy:
			need[t] = true // everything at or below a satellite container is in its table
		case q.Scope == mesh.ScopeExact:
			need[t] = true
		case q.Scope == mesh.ScopeChildren:
			need[mesh.TableFor(a+"/x")] = true
		case q.Scope == mesh.ScopeAncestors && t == mesh.NodesTable:
			need[mesh.NodesTable] = true // the ancestors of an ordinary path are ordinary
		default:
			return Tables()
		}
	}
	return slices.DeleteFunc(Tables(), func(t string) bool { return !need[t] })
}

// selectRows reads the nodes q selects from tables in schemas with ONE
// statement (sqlgen: a pinned SELECT, or one UNION ALL over every schema and
// table). What SQL cannot decide exactly it returns as a superset, and Go
// finishes the filter, the order and the limit with the query's own Matches
// and SortNodes, so the answer is the same either way.
func (s *Store) selectRows(ctx context.Context, q *mesh.Query, tables, schemas []string) ([]mesh.Node, error) {
	if len(tables) == 0 || len(schemas) == 0 {
		return nil, nil
	}
	sel, err := sqlgen.BuildTables(q, tables, schemas)
	if err != nil {
		return nil, err
	}
	s.reads.Add(1)
	rows, err := s.pool.Query(ctx, sel.SQL, sel.Args...)
	if err != nil {
		return nil, err
	}
	nodes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (mesh.Node, error) { return sqlgen.ScanNode(r) })
	if err != nil {
		return nil, err
	}
	if sel.Exact {
		return nodes, nil
	}
	nodes = slices.DeleteFunc(nodes, func(n mesh.Node) bool { return !q.Matches(n) })
	q.SortNodes(nodes)
	if q.Limit > 0 && len(nodes) > q.Limit {
		nodes = nodes[:q.Limit]
	}
	return nodes, nil
}

// read runs one read of a live query's plan and returns the result and the
// schemas it covers. A fan-out is logged with its shape and schema count.
//
// Every partition an unanchored query reads is known: the schema set learns
// of a new one from its first write's notice (and a reconnect reloads it).
// An anchored query may name a schema this store has not heard of yet,
// created by another process a moment ago: then the set is reloaded before
// the read, so the read is never short; a schema that does not exist holds
// nothing and is not read.
func (s *Store) read(ctx context.Context, q *mesh.Query, p plan) ([]mesh.Node, []string, error) {
	ctx, cancel, explain := s.bounded(ctx, s.budgets.QueryInitial, "reading query "+q.String())
	defer cancel()
	covered := s.covered(p)
	existing := s.schemas.existing(covered)
	if len(existing) < len(covered) {
		if err := s.schemas.load(ctx, s.pool); err != nil {
			return nil, nil, explain(err)
		}
		existing = s.schemas.existing(covered)
	}
	started := s.clk.Now()
	nodes, tables, err := s.selectRouted(ctx, q, p, existing)
	if err != nil {
		return nil, nil, explain(err)
	}
	if p.fanOut {
		s.log.Info("pgstore: fan-out read", "shape", p.shape, "schemas", len(existing),
			"tables", len(tables), "rows", len(nodes), "elapsed", s.clk.Since(started))
	}
	return nodes, covered, nil
}

// routedAttempts is how many times a type-routed read is retried after
// finding the routing it read by outdated (another process wrote a node
// type into a table in between); then it reads every table its anchor
// allows, which needs no routing.
const routedAttempts = 3

// selectRouted reads the nodes q selects with the tables p routes to. A
// typed read routes by the store's cached registry of node types per table,
// which another process's write may have outgrown before its change notice
// arrives here; so the read counts the registry's rows in the same round
// trip, before its rows: the registry only grows and a node's type row
// commits with the node, so a count no larger than the one the cache was
// loaded from means every node committed before the read is in a table it
// read. A larger count reloads the registry and reads again.
func (s *Store) selectRouted(ctx context.Context, q *mesh.Query, p plan, schemas []string) (nodes []mesh.Node, tables []string, err error) {
	if !p.typed {
		nodes, err = s.selectRows(ctx, q, p.tables, schemas)
		return nodes, p.tables, err
	}
	for range routedAttempts {
		tables, err := s.readTables(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		known := s.schemas.loadedTypes()
		nodes, count, err := s.selectRowsCounted(ctx, q, tables, schemas)
		if err != nil {
			return nil, nil, err
		}
		if count <= known {
			return nodes, tables, nil
		}
		// The registry has grown since it was loaded: reload it, and read
		// again only if it now routes to a table this read did not read
		// (often the growth is this store's own writes, already routed).
		if err := s.schemas.loadTypes(ctx, s.pool); err != nil {
			return nil, nil, fmt.Errorf("reading the node types of the node tables: %w", err)
		}
		now, stale := s.schemas.holding(p.tables, p.types)
		if !stale && subset(now, tables) {
			return nodes, tables, nil
		}
	}
	nodes, err = s.selectRows(ctx, q, p.tables, schemas)
	return nodes, p.tables, err
}

// subset reports whether every one of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// selectRowsCounted is selectRows preceded, in the same round trip, by a
// count of public.mesh_table_types.
func (s *Store) selectRowsCounted(ctx context.Context, q *mesh.Query, tables, schemas []string) ([]mesh.Node, int64, error) {
	const countTypes = "-- routing check\nSELECT count(*) FROM public.mesh_table_types"
	if len(tables) == 0 || len(schemas) == 0 {
		var n int64
		err := s.pool.QueryRow(ctx, countTypes).Scan(&n)
		return nil, n, err
	}
	sel, err := sqlgen.BuildTables(q, tables, schemas)
	if err != nil {
		return nil, 0, err
	}
	s.reads.Add(1)
	var b pgx.Batch
	b.Queue(countTypes)
	b.Queue(sel.SQL, sel.Args...)
	br := s.pool.SendBatch(ctx, &b)
	var n int64
	if err := br.QueryRow().Scan(&n); err != nil {
		_ = br.Close()
		return nil, 0, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, 0, err
	}
	nodes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (mesh.Node, error) { return sqlgen.ScanNode(r) })
	if err := errors.Join(err, br.Close()); err != nil {
		return nil, 0, err
	}
	if sel.Exact {
		return nodes, n, nil
	}
	nodes = slices.DeleteFunc(nodes, func(n mesh.Node) bool { return !q.Matches(n) })
	q.SortNodes(nodes)
	if q.Limit > 0 && len(nodes) > q.Limit {
		nodes = nodes[:q.Limit]
	}
	return nodes, n, nil
}

// readTables returns the node tables a read of p reads in each schema:
// those its anchor allows that, when its node types are known, have held a
// node of one of them (type routing: nodeType:Item reads mesh_nodes, not
// the satellite tables, unless an Item was ever stored in one).
func (s *Store) readTables(ctx context.Context, p plan) ([]string, error) {
	if !p.typed {
		return p.tables, nil
	}
	tables, stale := s.schemas.holding(p.tables, p.types)
	if !stale {
		return tables, nil
	}
	if err := s.schemas.loadTypes(ctx, s.pool); err != nil {
		return nil, fmt.Errorf("reading the node types of the node tables: %w", err)
	}
	tables, _ = s.schemas.holding(p.tables, p.types)
	return tables, nil
}

// covered returns the schemas a read of p covers now.
func (s *Store) covered(p plan) []string {
	if p.anySchema {
		return s.schemas.partitionList()
	}
	if p.schemas == nil {
		return []string{}
	}
	return p.schemas
}

// pointRead returns the nodes stored at paths (those present), read with
// one statement: one SELECT by path per (schema, table) they lie in, joined
// with UNION ALL.
func (s *Store) pointRead(ctx context.Context, paths []string) (map[string]mesh.Node, error) {
	type where struct{ schema, table string }
	groups := map[where][]string{}
	for _, p := range paths {
		schema, _, err := s.schemaFor(p)
		if err != nil || !s.schemas.has(schema) {
			continue // nothing can be stored there, or nothing is yet
		}
		w := where{schema, mesh.TableFor(p)}
		groups[w] = append(groups[w], p)
	}
	got := make(map[string]mesh.Node, len(paths))
	if len(groups) == 0 {
		return got, nil
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b where) int {
		return cmp.Or(strings.Compare(a.schema, b.schema), strings.Compare(a.table, b.table))
	})
	var sql strings.Builder
	args := make([]any, 0, len(keys))
	for i, w := range keys {
		if i > 0 {
			sql.WriteString("\nUNION ALL ")
		}
		args = append(args, groups[w])
		fmt.Fprintf(&sql, "SELECT %s FROM %s WHERE path = ANY($%d)", nodeColumns, pgx.Identifier{w.schema, w.table}.Sanitize(), len(args))
	}
	ctx, cancel, explain := s.bounded(ctx, s.budgets.QueryInitial, "re-reading written nodes")
	defer cancel()
	s.pointReads.Add(1)
	rows, err := s.pool.Query(ctx, sql.String(), args...)
	if err != nil {
		return nil, explain(err)
	}
	nodes, err := pgx.CollectRows(rows, collectNode)
	if err != nil {
		return nil, explain(err)
	}
	for _, n := range nodes {
		got[n.Path] = n
	}
	return got, nil
}
