package rxbench

import (
	"context"
	"fmt"

	"github.com/reactivex/rxgo/v2"
)

// sumObserver is the terminal consumer of the rx pipelines: it sums the
// values, as the loop baselines do.
type sumObserver struct {
	sum  int
	done bool
	err  error
}

func (o *sumObserver) OnNext(v int)      { o.sum += v }
func (o *sumObserver) OnError(err error) { o.err = err }
func (o *sumObserver) OnCompleted()      { o.done = true }

func (o *sumObserver) result() (int, error) {
	switch {
	case o.err != nil:
		return o.sum, o.err
	case !o.done:
		return o.sum, fmt.Errorf("rx pipeline returned from Subscribe without completing")
	}
	return o.sum, nil
}

// sumRxGo reads an rxgo channel to its end, summing int values.
func sumRxGo(items <-chan rxgo.Item) (int, error) {
	sum := 0
	for it := range items {
		if it.E != nil {
			return sum, it.E
		}
		sum += it.V.(int)
	}
	return sum, nil
}

// observeRxGo observes obs under a context cancelled once the channel has
// been read to its end, so no rxgo goroutine outlives the op.
func observeRxGo(obs rxgo.Observable, opts ...rxgo.Option) (int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	return sumRxGo(obs.Observe(append(opts, rxgo.WithContext(ctx))...))
}

// The B1 stages. The loop baseline calls them directly (the compiler inlines
// them); the libraries receive them as function values, as any caller's
// closures would be.
func double(x int) int                              { return x * 2 }
func quarter(x int) bool                            { return x%4 == 0 }
func double64(x int64) int64                        { return x * 2 }
func quarter64(x int64) bool                        { return x%4 == 0 }
func rxgoDbl(_ context.Context, v any) (any, error) { return v.(int) * 2, nil }
func rxgoQtr(v any) bool                            { return v.(int)%4 == 0 }

// stages holds the B1 stages as function values the compiler cannot see
// through, for the loop that pays the same indirect calls as the libraries.
type stages struct {
	f    func(int) int
	keep func(int) bool
}

func newStages() *stages { return &stages{f: double, keep: quarter} }

// wantB1 is the B1 result for n values, from the closed form: the kept
// values are 2x for even x < n, so the sum is 4 * (0 + 1 + ... + (n-1)/2).
func wantB1(n int) int {
	m := (n - 1) / 2
	return 4 * m * (m + 1) / 2
}
