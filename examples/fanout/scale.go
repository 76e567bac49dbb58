package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore"
)

// The scale phase (e) reads the 50 Items of partition "scale" while the
// partition grows to each of -scale's sizes.
const (
	scalePartition = "scale"
	scaleItems     = 50
	scaleQuery     = "namespace:" + scalePartition + " nodeType:" + itemType
	// scaleSQL is the hand-written indexed statement returning the rows of
	// scaleQuery's Initial: equality on the folded keys, which the
	// (ns_key, type_key) index serves.
	scaleSQL = `SELECT namespace, id, path, name, node_type, main_node, content, version, state, last_modified
FROM scale.mesh_nodes WHERE ns_key = 'scale' AND type_key = 'item' ORDER BY path COLLATE "C"`
	// scaleChunk is how many rows one bulk INSERT writes.
	scaleChunk = 100_000
)

// parseSizes reads -scale: ascending partition sizes, each at least 50.
func parseSizes(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		switch {
		case err != nil:
			return nil, fmt.Errorf("-scale: %q is not a number of nodes", f)
		case n < scaleItems:
			return nil, fmt.Errorf("-scale: %d is below the %d Items every size holds", n, scaleItems)
		case len(sizes) > 0 && n <= sizes[len(sizes)-1]:
			return nil, fmt.Errorf("-scale: sizes must ascend (%d after %d)", n, sizes[len(sizes)-1])
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// scalePoint is what phase e measured at one size.
type scalePoint struct {
	nodes          int // nodes in the partition
	grew           time.Duration
	backfilled     int64 // rows whose keys pgstore.BackfillKeys filled
	backfill       time.Duration
	store, handSQL latencies
}

// measureScale grows partition "scale" to each size and times, interleaved,
// the Initial of scaleQuery through Store.Query and scaleSQL on a pool of
// its own. The partition gets its 50 Items through Store.Put, and the rest
// (Doc, Note and Folder nodes in 1,000 namespaces below it) through bulk
// INSERT … SELECT generate_series without folded keys, as rows written
// before migration 0003 are; pgstore.BackfillKeys then folds them in Go.
// A database given with -pg keeps the partition: sizes it already has are
// measured as they are.
func measureScale(ctx context.Context, s *pgstore.Store, dbURL string, cfg config, progress io.Writer) ([]scalePoint, error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("opening a pool for the hand-written statement: %w", err)
	}
	defer pool.Close()
	items := make([]mesh.Node, scaleItems)
	for i := range items {
		items[i] = mesh.Node{Path: fmt.Sprintf("%s/item-%04d", scalePartition, i), NodeType: itemType, Name: fmt.Sprintf("Item %d", i)}
	}
	if err := putAll(ctx, s, items, cfg.workers); err != nil {
		return nil, err
	}
	var points []scalePoint
	for _, size := range cfg.scale {
		var p scalePoint
		var have int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM scale.mesh_nodes`).Scan(&have); err != nil {
			return points, err
		}
		began := time.Now()
		for have < size {
			n := min(size-have, scaleChunk)
			if _, err := pool.Exec(ctx, `
				INSERT INTO scale.mesh_nodes (namespace, id, name, node_type, content, version)
				SELECT 'scale/Bulk-' || lpad((i % 1000)::text, 3, '0'), 'Node-' || i, 'Node ' || i,
				       (ARRAY['Doc', 'Note', 'Folder'])[1 + i % 3], jsonb_build_object('n', i), 1
				FROM generate_series($1::bigint, $2::bigint) AS i`, have, have+n-1); err != nil {
				return points, fmt.Errorf("growing partition %s to %d nodes: %w", scalePartition, size, err)
			}
			have += n
		}
		p.grew = time.Since(began)
		began = time.Now()
		rep, err := backfill(ctx, dbURL)
		if err != nil {
			return points, err
		}
		p.backfilled, p.backfill = rep.Rows, time.Since(began)
		if _, err := pool.Exec(ctx, `ANALYZE scale.mesh_nodes`); err != nil {
			return points, err
		}
		p.nodes = have
		fmt.Fprintf(progress, "e: partition %s has %d nodes (grown in %s; keys of %d rows backfilled in %s)\n",
			scalePartition, have, p.grew.Round(time.Millisecond), p.backfilled, p.backfill.Round(time.Millisecond))

		viaStore := func(into *latencies) error {
			c, took, err := initial(ctx, s, scaleQuery)
			if err == nil && len(c.Items) != scaleItems {
				err = fmt.Errorf("query %s answered %d nodes, not %d", scaleQuery, len(c.Items), scaleItems)
			}
			if into != nil {
				into.add(took)
			}
			return err
		}
		viaSQL := func(into *latencies) error {
			began := time.Now()
			rows, err := pool.Query(ctx, scaleSQL)
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			if into != nil {
				into.add(time.Since(began))
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if n != scaleItems {
				return fmt.Errorf("the hand-written statement returned %d rows, not %d", n, scaleItems)
			}
			return nil
		}
		if err := errors.Join(viaStore(nil), viaSQL(nil)); err != nil { // warm both
			return points, err
		}
		for i := range cfg.iterations {
			first, second := func() error { return viaStore(&p.store) }, func() error { return viaSQL(&p.handSQL) }
			if i%2 == 1 {
				first, second = second, first
			}
			if err := errors.Join(first(), second()); err != nil {
				return points, err
			}
		}
		points = append(points, p)
	}
	return points, nil
}

// backfill runs pgstore.BackfillKeys on a connection of its own.
func backfill(ctx context.Context, dbURL string) (pgstore.BackfillReport, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return pgstore.BackfillReport{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rep, err := pgstore.BackfillKeys(ctx, conn)
	if err != nil {
		return rep, err
	}
	if rep.Skipped {
		return rep, errors.New("another key backfill holds the lock; run again when it is done")
	}
	return rep, nil
}
