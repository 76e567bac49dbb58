package rxbench

import (
	"context"
	"testing"

	"github.com/meshrx/meshrx/rx"
)

// BenchmarkB21ConsumerCall: the cost of one call of each blocking consumer
// over a one-value synchronous source (Of(1)), with a ctx that can end (the
// consumer ties it to the subscription with context.AfterFunc, and waits
// for a cancellation that started on AfterFunc's goroutine) and with one
// that cannot (context.Background(): nothing to tie). Per call, not per
// value: the values' paths do not touch ctx's link.
func BenchmarkB21ConsumerCall(b *testing.B) {
	src := rx.Of(1)
	ctxs := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"background", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
		{"cancellable", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
	}
	for _, c := range ctxs {
		ctx, cancel := c.ctx()
		b.Run("All/ctx="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			s := 0
			for b.Loop() {
				for v, err := range rx.All(ctx, src) {
					if err != nil {
						b.Fatal(err)
					}
					s += v
				}
			}
			sink = s
		})
		b.Run("First/ctx="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rx.First(ctx, src); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Collect/ctx="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rx.Collect(ctx, src); err != nil {
					b.Fatal(err)
				}
			}
		})
		cancel()
	}
}
