package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/rx"
)

// stopBudget bounds the wait for readers or live queries to end once told
// to: each has only to notice its context ended.
const stopBudget = 30 * time.Second

// BudgetError reports a phase, or a wait inside one, that ran out of time.
type BudgetError struct {
	What   string
	Budget time.Duration
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("fanout: %s did not finish within %s", e.What, e.Budget)
}

// inPhase runs f with ctx bounded by budget; when the budget is what ended
// it, the error is a *BudgetError naming the phase.
func inPhase(ctx context.Context, name string, budget time.Duration, progress io.Writer, f func(context.Context) error) error {
	fmt.Fprintf(progress, "%s…\n", name)
	began := time.Now()
	pctx, cancel := context.WithTimeoutCause(ctx, budget, &BudgetError{What: name, Budget: budget})
	defer cancel()
	if err := f(pctx); err != nil {
		var be *BudgetError
		if cause := context.Cause(pctx); ctx.Err() == nil && errors.As(cause, &be) {
			return fmt.Errorf("%w: %w", cause, err)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(progress, "%s: done in %s\n", name, time.Since(began).Round(time.Millisecond))
	return nil
}

// result is everything a run measured.
type result struct {
	filled                   int
	pinnedRead, fanOutRead   latencies
	fanOutNodes, fanOutParts int // what the last fan-out read answered, and from how many schemas
	pinnedLocks, fanOutLocks int
	alone, pinned, fanOut    besideRun
	typed, untyped           requeries
	scale                    []scalePoint
}

// measure fills the database at dbURL and runs the four measurements.
func measure(ctx context.Context, dbURL string, cfg config, progress io.Writer, logger *slog.Logger) (res result, err error) {
	runID, err := newRunID()
	if err != nil {
		return res, err
	}
	// Enough connections that the writer and the store's own re-reads never
	// wait for one behind the readers: the writer measures the database.
	opts := pgstore.Options{Logger: logger, MaxConns: int32(cfg.readers + 4)}
	s, err := pgstore.Open(ctx, dbURL, opts)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	budget := cfg.phaseBudget

	err = inPhase(ctx, fmt.Sprintf("setup: writing %d partitions", cfg.partitions), budget, progress, func(ctx context.Context) error {
		var err error
		res.filled, err = fill(ctx, s, cfg.partitions, cfg.rows, cfg.workers, progress)
		return err
	})
	if err != nil {
		return res, err
	}

	err = inPhase(ctx, "a: pinned and fan-out read latency", budget, progress, func(ctx context.Context) error {
		var err error
		res.pinnedRead, res.fanOutRead, res.fanOutNodes, res.fanOutParts, err = compareReads(ctx, s, cfg)
		return err
	})
	if err != nil {
		return res, err
	}

	err = inPhase(ctx, "b: relation locks held", budget, progress, func(ctx context.Context) error {
		var err error
		if res.pinnedLocks, err = s.LocksHeld(ctx, pinnedQuery(0)); err != nil {
			return err
		}
		res.fanOutLocks, err = s.LocksHeld(ctx, fanOutQuery)
		return err
	})
	if err != nil {
		return res, err
	}

	for i, c := range []struct {
		name  string
		query func(int) string // nil: no readers
		into  *besideRun
	}{
		{"c: writer alone", nil, &res.alone},
		{fmt.Sprintf("c: writer beside %d pinned readers", cfg.readers), pinnedQuery, &res.pinned},
		{fmt.Sprintf("c: writer beside %d fan-out readers", cfg.readers), func(int) string { return fanOutQuery }, &res.fanOut},
	} {
		label := fmt.Sprintf("%s-c%d", runID, i)
		err = inPhase(ctx, c.name, budget, progress, func(ctx context.Context) error {
			var err error
			*c.into, err = writerBeside(ctx, s, cfg, label, c.query, progress, c.name)
			return err
		})
		if err != nil {
			return res, err
		}
	}

	err = inPhase(ctx, fmt.Sprintf("d: re-reads from %d %s writes, typed feed", cfg.writes, otherType), budget, progress, func(ctx context.Context) error {
		var err error
		res.typed, err = countRequeries(ctx, s, s, putOther(s), cfg, runID+"-typed")
		return err
	})
	if err != nil {
		return res, err
	}
	err = inPhase(ctx, fmt.Sprintf("d: re-reads from %d %s writes, untyped feed", cfg.writes, otherType), budget, progress, func(ctx context.Context) error {
		// The same writes announced without their node type, on the
		// public channel a writer the triggers do not cover would use.
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return fmt.Errorf("connecting to send the untyped notices: %w", err)
		}
		res.untyped, err = countRequeries(ctx, s, s, notifyUntyped(conn), cfg, runID+"-untyped")
		return errors.Join(err, conn.Close(context.WithoutCancel(ctx)))
	})
	if err != nil || len(cfg.scale) == 0 {
		return res, err
	}
	// Last, so partition "scale" is not among the partitions of a–d.
	err = inPhase(ctx, "e: pinned read as the partition grows", budget, progress, func(ctx context.Context) error {
		var err error
		res.scale, err = measureScale(ctx, s, dbURL, cfg, progress)
		return err
	})
	return res, err
}

// newRunID names this run's writes, so that each is an insert even on a
// database an earlier run used.
func newRunID() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("naming the run: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// initial returns the Initial frame of q, and how long it took.
func initial(ctx context.Context, s *pgstore.Store, q string) (mesh.Change, time.Duration, error) {
	began := time.Now()
	c, err := rx.First(ctx, s.Query(q))
	took := time.Since(began)
	if err != nil {
		return c, took, fmt.Errorf("query %s: %w", q, err)
	}
	if c.Kind != mesh.Initial {
		return c, took, fmt.Errorf("query %s: the first frame is %v, not the Initial", q, c.Kind)
	}
	return c, took, nil
}

// compareReads times the pinned read against the fan-out, interleaved
// (alternating which goes first) so that both see the same conditions,
// after one untimed read of each. Every answer is checked: at least the
// Items this run wrote (a database given with -pg may hold more), and
// the fan-out's size and schema count are returned.
func compareReads(ctx context.Context, s *pgstore.Store, cfg config) (pinned, fanOut latencies, nodes, schemas int, err error) {
	read := func(q string, want int, into *latencies) error {
		c, took, err := initial(ctx, s, q)
		if err != nil {
			return err
		}
		if len(c.Items) < want {
			return fmt.Errorf("query %s answered %d nodes; the run wrote %d", q, len(c.Items), want)
		}
		if into != nil {
			into.add(took)
		}
		if q == fanOutQuery {
			nodes, schemas = len(c.Items), len(c.Partitions)
		}
		return nil
	}
	if err := errors.Join(read(pinnedQuery(0), cfg.rows, nil), read(fanOutQuery, cfg.rows*cfg.partitions, nil)); err != nil {
		return pinned, fanOut, nodes, schemas, err
	}
	for i := range cfg.iterations {
		p := func() error { return read(pinnedQuery(i%cfg.partitions), cfg.rows, &pinned) }
		f := func() error { return read(fanOutQuery, cfg.rows*cfg.partitions, &fanOut) }
		if i%2 == 1 {
			p, f = f, p
		}
		if err := p(); err != nil {
			return pinned, fanOut, nodes, schemas, err
		}
		if err := f(); err != nil {
			return pinned, fanOut, nodes, schemas, err
		}
	}
	return pinned, fanOut, nodes, schemas, nil
}

// waitStopped waits, at most stopBudget, for wg.
func waitStopped(wg *sync.WaitGroup, what string) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	timer := time.NewTimer(stopBudget)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
		return &BudgetError{What: "waiting for " + what + " to stop", Budget: stopBudget}
	}
}
