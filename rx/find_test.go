package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// RxJS find's marble ('--a--b--c--|', find b → '-----(b|)'), in Rx.NET's
// harness: the match is emitted at its arrival with the completion, the
// source is unsubscribed then and the predicate is not asked again; no
// match completes empty (RxJS would emit undefined). Negative control: with
// answer not cancelling the source, the span was Sub(200, 400) and the
// predicate ran 3 times.
func TestFindEmitsTheFirstMatchAndStopsAskingOrCompletesEmptyWithoutOne(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(220), 1), rxtest.Next(ms(250), 2), rxtest.Next(ms(280), 3), rxtest.Completed[int](ms(400)))
	calls := 0
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] {
		return rx.Find[int](xs, func(v int) bool { calls++; return v%2 == 0 })
	})
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(250), 2), rxtest.Completed[int](ms(250))}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(250))}, xs.Subscriptions())
	assert.Equal(t, 2, calls)

	vs, err := collect(t, rx.Find(rx.Of(1, 3, 5), func(v int) bool { return v%2 == 0 }))
	assert.NoError(t, err)
	assert.Empty(t, vs, "no match: completes without a value")
}

// A predicate that unsubscribes gets its value dropped. Negative control:
// without the cancelled() checks after match and in verdict.answer (either
// one suffices), the matching value was delivered after Unsubscribe
// returned: OnNext(0s, 1) here, and the conformance rule "nothing after
// Unsubscribe inside a user function" reported Find too.
func TestFindDropsTheMatchWhosePredicateUnsubscribed(t *testing.T) {
	s := rx.NewSubject[int]()
	var sub rx.Subscription
	rec := rxtest.NewRecorder[int](nil)
	sub = rx.Find[int](s, func(v int) bool { sub.Unsubscribe(); return true }).Subscribe(rec)
	s.OnNext(1)
	assert.Empty(t, rec.Events())
}
