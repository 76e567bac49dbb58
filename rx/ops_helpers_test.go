package rx_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

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
