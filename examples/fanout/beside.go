package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore"
)

// outcomes counts operations that succeeded and failed, keeping the first
// failure to show.
type outcomes struct {
	ok, failed atomic.Int64
	first      atomic.Pointer[string]
}

func (o *outcomes) record(err error) {
	if err == nil {
		o.ok.Add(1)
		return
	}
	o.failed.Add(1)
	msg := err.Error()
	o.first.CompareAndSwap(nil, &msg)
}

// tally is a snapshot of outcomes.
type tally struct {
	ok, failed int64
	first      string // the first failure, "" when none
}

func (o *outcomes) tally() tally {
	t := tally{ok: o.ok.Load(), failed: o.failed.Load()}
	if p := o.first.Load(); p != nil {
		t.first = *p
	}
	return t
}

// besideRun is one condition of phase c.
type besideRun struct {
	writer  latencies // every insert, failed ones with their elapsed time
	writes  tally
	readers tally // zero when the writer ran alone
}

// writerBeside times cfg.iterations inserts of new nodes, one after another,
// each into one partition (round robin), while cfg.readers readers loop
// query(k) reads, or alone when query is nil. The writer starts once every
// reader has finished a read, and the readers stop when it is done.
//
// An insert or a read the database fails (it may run out of lock table
// memory beside fan-outs) is counted, not fatal: the failure is part of
// what is measured. A failed insert counts in the percentiles with the
// time it took to fail.
func writerBeside(ctx context.Context, s *pgstore.Store, cfg config, label string, query func(int) string, progress io.Writer, name string) (besideRun, error) {
	var run besideRun
	var writes, reads outcomes
	rctx, stopReaders := context.WithCancel(ctx)
	defer stopReaders()
	var wg sync.WaitGroup
	if query != nil {
		ready := make(chan struct{}, cfg.readers)
		for r := range cfg.readers {
			wg.Go(func() {
				signalled := false
				for k := r; rctx.Err() == nil; k += cfg.readers {
					_, _, err := initial(rctx, s, query(k%cfg.partitions))
					if rctx.Err() != nil {
						return // stopped mid-read: not a failure
					}
					reads.record(err)
					if !signalled {
						signalled = true
						ready <- struct{}{}
					}
				}
			})
		}
		for range cfg.readers {
			select {
			case <-ready:
			case <-ctx.Done():
				stopReaders()
				return run, errors.Join(fmt.Errorf("waiting for every reader's first read: %w", context.Cause(ctx)),
					waitStopped(&wg, "the readers"))
			}
		}
		fmt.Fprintf(progress, "%s: readers running; the writer starts\n", name)
	}

	var werr error
	for i := range cfg.iterations {
		n := mesh.Node{Path: fmt.Sprintf("%s/w-%s-%05d", partition(i%cfg.partitions), label, i), NodeType: writeType}
		began := time.Now()
		stored, err := s.Put(ctx, n)
		took := time.Since(began)
		if ctx.Err() != nil {
			werr = fmt.Errorf("writer: %w", context.Cause(ctx))
			break
		}
		run.writer.add(took)
		writes.record(err)
		if err == nil && stored.Version != 1 {
			werr = fmt.Errorf("writer: %s has version %d: it was not a new node", n.Path, stored.Version)
			break
		}
	}
	stopReaders()
	werr = errors.Join(werr, waitStopped(&wg, "the readers"))
	run.writes, run.readers = writes.tally(), reads.tally()
	return run, werr
}
