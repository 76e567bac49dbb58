package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The operators that end their stream before their source does (Take at
// its n-th value, Contains and Every at their answer, SkipUntil failing
// while its signal is live) release their sources when the stream ends,
// also when the observer panics in the terminal notification: the caller
// may never call Unsubscribe. The conformance rule "an observer panicking
// at the end leaves nothing subscribed" covers the entries that end so;
// these are the early ends its entries do not reach. Negative control
// (run): with take.go, verdict.go and skipuntil.go cancelling after the
// terminal call rather than deferring it, every case failed with the
// source still subscribed.
func TestAnOperatorEndingEarlyReleasesItsSourcesWhenTheObserverPanicsAtTheEnd(t *testing.T) {
	for name, build := range map[string]func(in, in2 *rx.Subject[int]) rx.Observable[int]{
		"Take":       func(in, _ *rx.Subject[int]) rx.Observable[int] { return rx.Take[int](unfused{in}, 2) },
		"Take fused": func(in, _ *rx.Subject[int]) rx.Observable[int] { return rx.Take[int](in, 2) },
		"Contains":   func(in, _ *rx.Subject[int]) rx.Observable[int] { return boolInt(rx.Contains[int](in, 2)) },
		"Every": func(in, _ *rx.Subject[int]) rx.Observable[int] {
			return boolInt(rx.Every(in, func(v int) bool { return v < 2 }))
		},
		"SkipUntil failing before its signal": func(in, in2 *rx.Subject[int]) rx.Observable[int] {
			return rx.SkipUntil[int, int](rx.Concat[int](rx.Take[int](in, 1), rx.Throw[int](rxtest.ErrTest)), in2)
		},
	} {
		t.Run(name, func(t *testing.T) {
			in, in2 := rx.NewSubject[int](), rx.NewSubject[int]()
			panicsAtTheEnd := func() { panic(bug{}) }
			o := rx.NewObserver(func(int) {}, func(error) { panicsAtTheEnd() }, panicsAtTheEnd)
			var sub rx.Subscription
			p := recovered(func() {
				sub = build(in, in2).Subscribe(o)
				in.OnNext(1)
				in.OnNext(2)
			})
			assert.IsType(t, bug{}, p, "the observer's panic reaches the caller")
			assert.False(t, in.HasObservers(), "the source is still subscribed after the stream ended")
			assert.False(t, in2.HasObservers(), "the signal is still subscribed after the stream ended")
			if sub != nil {
				sub.Unsubscribe()
			}
		})
	}
}
