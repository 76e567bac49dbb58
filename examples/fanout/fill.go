package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meshrx/meshrx/mesh"
)

// maxPartitions keeps partition names three digits wide.
const maxPartitions = 1000

// Node types of the mesh the run builds.
const (
	itemType  = "Item"  // what both reads select
	writeType = "Write" // the writer's inserts (c)
	otherType = "Other" // the unrelated writes (d)
	fenceType = "Fence" // marks a point in the change feed (d)
)

// partition returns the name of partition i.
func partition(i int) string { return fmt.Sprintf("p%03d", i) }

// pinnedQuery reads partition i's Items: one schema, one table.
func pinnedQuery(i int) string {
	return fmt.Sprintf("namespace:%s nodeType:%s", partition(i), itemType)
}

// fanOutQuery is the same read over every partition.
const fanOutQuery = "nodeType:" + itemType + " partitions:all"

// fill writes rows Items into each of partitions partitions, plus a few
// nodes of other types (in mesh_nodes and in a satellite table), with at
// most workers writes at a time: first one node per partition (which
// creates its schema), then the rest. Rewriting what a previous run wrote
// changes nothing (the store keeps versions for visible changes only).
func fill(ctx context.Context, w writer, partitions, rows, workers int, progress io.Writer) (int, error) {
	var first, rest []mesh.Node
	for p := range partitions {
		part := partition(p)
		for r := range rows {
			content, err := json.Marshal(map[string]int{"n": r})
			if err != nil {
				return 0, err
			}
			n := mesh.Node{Path: fmt.Sprintf("%s/item-%04d", part, r), NodeType: itemType, Name: fmt.Sprintf("Item %d", r), Content: content}
			if r == 0 {
				first = append(first, n)
			} else {
				rest = append(rest, n)
			}
		}
		rest = append(rest,
			mesh.Node{Path: part + "/notes", NodeType: "Folder", Name: "Notes"},
			mesh.Node{Path: part + "/notes/welcome", NodeType: "Note", Name: "Welcome"},
			mesh.Node{Path: part + "/_Thread/t1", NodeType: "Thread", Name: "First thread"},
		)
	}
	began := time.Now()
	if err := putAll(ctx, w, first, workers); err != nil {
		return 0, err
	}
	fmt.Fprintf(progress, "setup: %d partitions created (or found) in %s\n", len(first), time.Since(began).Round(time.Millisecond))
	began = time.Now()
	if err := putAll(ctx, w, rest, workers); err != nil {
		return len(first), err
	}
	fmt.Fprintf(progress, "setup: %d more nodes written in %s\n", len(rest), time.Since(began).Round(time.Millisecond))
	return len(first) + len(rest), nil
}

// putAll writes nodes with at most workers writes at a time; the first
// failure stops it.
func putAll(ctx context.Context, w writer, nodes []mesh.Node, workers int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(nodes)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(nodes)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				if _, err := w.Put(ctx, nodes[i]); err != nil {
					cancel(fmt.Errorf("writing %s: %w", nodes[i].Path, err))
					return
				}
			}
		})
	}
	// Each Put is bounded by ctx and the store's operation budget.
	wg.Wait()
	return context.Cause(ctx)
}

// writer is the part of a store that fill needs.
type writer interface {
	Put(ctx context.Context, n mesh.Node) (mesh.Node, error)
}
