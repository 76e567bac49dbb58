package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// A cleanup of the user's that panics (Finally's f, Using's release) while
// a subscription is being cancelled reaches the caller, and the rest of
// the cancellation still runs: a merged sibling is unsubscribed. Once the
// subscription is cancelled no later Unsubscribe reaches what it left, so
// a cleanup's panic must not cut the cancellation short. Negative control
// (run): with scope.cancel running its children and hooks in a plain loop
// (before release), Finally's two cases and Using's by Unsubscribe left in2
// subscribed, also after a second Unsubscribe.
func TestACleanupThatPanicsLeavesNothingElseOfTheSubscriptionSubscribed(t *testing.T) {
	boom := func() { panic(bug{}) }
	builds := map[string]func(in, in2 *rx.Subject[int]) rx.Observable[int]{
		"Finally": func(in, in2 *rx.Subject[int]) rx.Observable[int] {
			return rx.Merge[int](in2, rx.Finally(in, boom))
		},
		"Using": func(in, in2 *rx.Subject[int]) rx.Observable[int] {
			return rx.Merge[int](in2, rx.Using(func() (int, error) { return 0, nil },
				func(int) rx.Observable[int] { return in }, func(int) { boom() }))
		},
	}
	ends := map[string]func(in *rx.Subject[int], sub rx.Subscription){
		"by Unsubscribe":        func(_ *rx.Subject[int], sub rx.Subscription) { sub.Unsubscribe() },
		"by the source's error": func(in *rx.Subject[int], _ rx.Subscription) { in.OnError(rxtest.ErrTest) },
	}
	for bname, build := range builds {
		for ename, end := range ends {
			t.Run(bname+" "+ename, func(t *testing.T) {
				in, in2 := rx.NewSubject[int](), rx.NewSubject[int]()
				sub := build(in, in2).Subscribe(rxtest.NewRecorder[int](nil))
				assert.IsType(t, bug{}, recovered(func() { end(in, sub) }), "the cleanup's panic reaches the caller")
				assert.False(t, in2.HasObservers(), "the merged sibling is still subscribed after the cleanup panicked")
				sub.Unsubscribe()
				assert.False(t, in2.HasObservers(), "the merged sibling is still subscribed after Unsubscribe")
			})
		}
	}
}
