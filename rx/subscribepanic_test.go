package rx_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// A user function that panics inside a plain Subscribe (over a source that
// delivers there) leaves the caller no Subscription: the chain must release
// what it holds by itself — a timer armed, a subject subscribed, a Finally
// — as First, Collect and All do, and deliver nothing afterwards.
// Negative control, run by hand: with observableFunc.Subscribe and
// timeoutObservable.Subscribe calling their function directly (as at
// 4b8cbd4), Timeout delivered its TimeoutError a second after the panic,
// Debounce the value it held, and Merge kept the Subject's subscription
// (value 7 delivered, Finally never ran).
func TestAPanicOutOfAPlainSubscribeReleasesWhatTheChainHolds(t *testing.T) {
	panicsAt2 := func(v int) int {
		if v == 2 {
			panic(bug{})
		}
		return v
	}
	for name, build := range map[string]func(clk *rxtest.Clock, s *rx.Subject[int], log func(string)) rx.Observable[int]{
		"Timeout": func(clk *rxtest.Clock, _ *rx.Subject[int], _ func(string)) rx.Observable[int] {
			return rx.Timeout(rx.Map(rx.Of(1, 2), panicsAt2), time.Second, clk)
		},
		"Debounce": func(clk *rxtest.Clock, _ *rx.Subject[int], _ func(string)) rx.Observable[int] {
			return rx.Debounce(rx.Map(rx.Of(1, 2), panicsAt2), time.Second, clk)
		},
		"Merge, Finally": func(_ *rxtest.Clock, s *rx.Subject[int], log func(string)) rx.Observable[int] {
			return rx.Finally(rx.Merge[int](s, rx.Map(rx.Of(1, 2), panicsAt2)), func() { log("finally") })
		},
	} {
		clk := rxtest.NewClock()
		s := rx.NewSubject[int]()
		var got []string
		log := func(e string) { got = append(got, e) }
		o := rx.NewObserver(func(int) { log("next") }, func(error) { log("error") }, func() { log("completed") })
		p := recovered(func() { build(clk, s, log).Subscribe(o) })
		assert.IsType(t, bug{}, p, name)
		before := len(got)
		s.OnNext(7)
		clk.Advance(5 * time.Second)
		s.OnCompleted()
		for _, e := range got[before:] {
			assert.NotEqual(t, "next", e, "%s: delivered after the panic: %v", name, got)
			assert.NotEqual(t, "error", e, "%s: delivered after the panic: %v", name, got)
		}
		assert.Zero(t, clk.Pending(), "%s: a timer left armed", name)
		if name == "Merge, Finally" {
			assert.Contains(t, got, "finally", "%s: the cleanup did not run", name)
		}
	}
}
