package rx_test

import (
	"bytes"
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// interleaved maps 1 to values at 10, 30, 50 and 2 to values at 20, 40, 60
// (ticks after the mapping), so merging and concatenating differ.
func interleaved(clk *rxtest.Clock) func(int) rx.Observable[int] {
	return func(k int) rx.Observable[int] {
		start := time.Duration(k) * 10 * tick
		return rxtest.Cold(clk,
			rxtest.Next(start, k*10+1), rxtest.Next(start+20*tick, k*10+2), rxtest.Next(start+40*tick, k*10+3),
			rxtest.Completed[int](start+40*tick))
	}
}

// goroutineInner emits n values from its own goroutine.
func goroutineInner(k, n int) rx.Observable[int] {
	return rx.Create(func(ctx context.Context, o rx.Observer[int]) {
		go func() {
			for i := 0; i < n && ctx.Err() == nil; i++ {
				o.OnNext(k*n + i)
			}
			o.OnCompleted()
		}()
	})
}

// tick is the unit of the ported Rx.NET TimeoutTest vectors.
const tick = time.Millisecond

// endless is an endless synchronous source that counts what it emits and
// stops only when its context says the chain has unsubscribed.
func endless(emitted *atomic.Int64) rx.Observable[int] {
	return rx.Create(func(ctx context.Context, o rx.Observer[int]) {
		for i := 0; ctx.Err() == nil; i++ {
			emitted.Add(1)
			o.OnNext(i)
		}
	})
}

// collect returns src's values and error, failing the test on a grammar
// violation.
func collect[T any](t *testing.T, src rx.Observable[T]) ([]T, error) {
	t.Helper()
	rec := rxtest.Record(nil, src)
	require.NoError(t, rec.GrammarErr())
	require.True(t, rec.Terminated(), "the stream did not terminate")
	return rec.Values(), rec.Err()
}

// probe is a synchronous source of vs that counts what it emitted and keeps
// its subscription's context, which ends when it is unsubscribed.
type probe struct {
	emitted atomic.Int64
	ctx     context.Context
}

func (p *probe) unsubscribed() bool { return p.ctx != nil && p.ctx.Err() != nil }

func (p *probe) of(vs ...int) rx.Observable[int] {
	return rx.Create(func(ctx context.Context, o rx.Observer[int]) {
		p.ctx = ctx
		for _, v := range vs {
			if ctx.Err() != nil {
				return
			}
			p.emitted.Add(1)
			o.OnNext(v)
		}
		o.OnCompleted()
	})
}

// ms reads an Rx.NET test tick count as milliseconds of virtual time.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// goroutineID is the id of the calling goroutine, read from its stack
// header ("goroutine 7 [running]:").
func goroutineID() string {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	return string(b[:bytes.IndexByte(b, ' ')])
}
