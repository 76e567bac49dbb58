package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/rx"
)

// requeries is one re-read count of phase d.
type requeries struct {
	count   int64 // Stats().Requeries caused by the writes
	notices int64 // notices the store received meanwhile (Stats().Notices)
	skipped int64 // Stats().Skipped meanwhile
	ended   tally // live queries that ended before the count was taken (failed), with the first reason
}

// notify announces a write of path to s's feed; countRequeries measures the
// re-reads its notices cause.
type notify func(ctx context.Context, path string) error

// putOther writes a node of the unrelated type at path through w: its notice
// carries the node type, as every notify trigger's does.
func putOther(w *pgstore.Store) notify {
	return func(ctx context.Context, path string) error {
		_, err := w.Put(ctx, mesh.Node{Path: path, NodeType: otherType})
		return err
	}
}

// notifyUntyped sends, on the store's public NotifyChannel, the notice of an
// update of path without its node type: what a writer the triggers do not
// cover (or an older one) sends. Every live query whose schema and anchor
// hold path must then re-read, whatever it selects.
func notifyUntyped(conn *pgx.Conn) notify {
	return func(ctx context.Context, path string) error {
		payload, err := json.Marshal(map[string]string{"path": path, "op": "UPDATE"})
		if err != nil {
			return err
		}
		_, err = conn.Exec(ctx, `SELECT pg_notify($1, $2)`, pgstore.NotifyChannel, string(payload))
		return err
	}
}

// countRequeries opens cfg.live fan-out live queries on s, waits for each
// Initial, then announces cfg.writes writes of an unrelated type through
// write and returns how many re-reads s counted for them.
//
// The notices are awaited on s's change feed (bounded by ctx), never
// guessed at with a sleep: a fence write before the baseline makes sure
// every earlier write's notice is already counted (the feed is in commit
// order), and s counts a notice's re-reads before announcing it. A live
// query that ends meanwhile is counted in ended; it re-reads nothing more,
// so the count then falls short of writes × live.
func countRequeries(ctx context.Context, s, w *pgstore.Store, write notify, cfg config, label string) (requeries, error) {
	var res requeries
	var subs []rx.Subscription
	defer func() {
		for _, sub := range subs {
			sub.Unsubscribe()
		}
	}()
	var ended outcomes
	for i := range cfg.live {
		initialDone := make(chan struct{})
		failed := make(chan error, 1)
		var once sync.Once
		end := func(err error) {
			ended.record(fmt.Errorf("live query %d: %w", i, err))
			failed <- err
		}
		subs = append(subs, s.Query(fanOutQuery).Subscribe(rx.NewObserver(
			func(mesh.Change) { once.Do(func() { close(initialDone) }) },
			end,
			func() { end(fmt.Errorf("completed while it should be open")) },
		)))
		// One Initial at a time: the point is the open queries, not a burst
		// of concurrent fan-outs.
		select {
		case <-initialDone:
		case err := <-failed:
			return res, fmt.Errorf("live query %d ended before its Initial: %w", i, err)
		case <-ctx.Done():
			return res, fmt.Errorf("waiting for the Initial of live query %d: %w", i, context.Cause(ctx))
		}
	}

	prefix := "/other-" + label + "-"
	fencePath := partition(0) + "/fence-" + label
	var seen atomic.Int64
	var fenceOnce sync.Once
	fence, all := make(chan struct{}), make(chan struct{})
	feed := s.Changes().Subscribe(rx.NewObserver(func(n mesh.ChangeNotice) {
		switch {
		case n.Path == fencePath:
			fenceOnce.Do(func() { close(fence) })
		case strings.Contains(n.Path, prefix):
			if seen.Add(1) == int64(cfg.writes) {
				close(all)
			}
		}
	}, nil, nil))
	defer feed.Unsubscribe()

	if _, err := w.Put(ctx, mesh.Node{Path: fencePath, NodeType: fenceType}); err != nil {
		return res, fmt.Errorf("writing the fence: %w", err)
	}
	if err := await(ctx, fence, func() string { return "the notice of the fence write" }); err != nil {
		return res, err
	}
	before := s.Stats()
	for i := range cfg.writes {
		if err := write(ctx, fmt.Sprintf("%s%s%05d", partition(i%cfg.partitions), prefix, i)); err != nil {
			return res, fmt.Errorf("write %d: %w", i, err)
		}
	}
	err := await(ctx, all, func() string {
		return fmt.Sprintf("the notices of %d writes (%d arrived)", cfg.writes, seen.Load())
	})
	if err != nil {
		return res, err
	}
	after := s.Stats()
	res.count = after.Requeries - before.Requeries
	res.notices = after.Notices - before.Notices
	res.skipped = after.Skipped - before.Skipped
	res.ended = ended.tally()
	return res, nil
}

// await waits for done or the end of ctx, naming what it waited for.
func await(ctx context.Context, done <-chan struct{}, what func() string) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s: %w", what(), context.Cause(ctx))
	}
}
