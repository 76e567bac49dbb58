package rx_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// An observer that panics on a value a synchronous inner delivers inside
// its Subscribe (Return(v)) tears that inner: its completion never comes.
// As for a panic out of a plain Subscribe, the inner is then over (released
// and no longer waited for), so the panic costs that value only: the values
// after it are delivered and the stream completes, as after a panicking
// selector. Negative control (run): without the torn-inner handling in
// merger.subscribe, concatMapper.step, exhaustOuter.OnNext,
// flattener.subscribeInner and switchOuter.OnNext, SelectMany, MergeAll and
// the Switches (torn at their last inner) never completed, and ConcatMap, ConcatAll, ExhaustMap and
// SelectManyLimit (one at a time) delivered nothing after the panic and
// never completed.
func TestAnObserverPanickingInsideASynchronousInnerCostsTheValueNotTheStream(t *testing.T) {
	ret := func(v int) rx.Observable[int] { return rx.Return(v) }
	for name, build := range map[string]func(in rx.Observable[int]) rx.Observable[int]{
		"SelectMany":      func(in rx.Observable[int]) rx.Observable[int] { return rx.SelectMany(in, ret) },
		"ConcatMap":       func(in rx.Observable[int]) rx.Observable[int] { return rx.ConcatMap(in, ret) },
		"ExhaustMap":      func(in rx.Observable[int]) rx.Observable[int] { return rx.ExhaustMap(in, ret) },
		"MergeAll":        func(in rx.Observable[int]) rx.Observable[int] { return rx.MergeAll(rx.Map(in, ret)) },
		"ConcatAll":       func(in rx.Observable[int]) rx.Observable[int] { return rx.ConcatAll(rx.Map(in, ret)) },
		"SelectManyLimit": func(in rx.Observable[int]) rx.Observable[int] { return rx.SelectManyLimit(in, ret, 1) },
		"SwitchMap":       func(in rx.Observable[int]) rx.Observable[int] { return rx.SwitchMap(in, ret) },
		"Switch":          func(in rx.Observable[int]) rx.Observable[int] { return rx.Switch(rx.Map(in, ret)) },
	} {
		for _, at := range []int{2, 4} { // a value followed by others, and the last
			t.Run(fmt.Sprintf("%s, panicking at %d", name, at), func(t *testing.T) {
				in := rx.NewSubject[int]()
				rec := rxtest.NewRecorder[int](nil)
				panicked := false
				build(in).Subscribe(rx.NewObserver(func(v int) {
					rec.OnNext(v)
					if v == at && !panicked {
						panicked = true
						panic(bug{})
					}
				}, rec.OnError, rec.OnCompleted))
				for v := 1; v <= 4; v++ {
					p := recovered(func() { in.OnNext(v) })
					if v == at {
						assert.IsType(t, bug{}, p, "the observer's panic reaches the caller")
					}
				}
				in.OnCompleted()
				assert.Equal(t, []int{1, 2, 3, 4}, rec.Values())
				assert.True(t, rec.Terminated(), "the stream did not complete")
				assert.NoError(t, rec.Err())
			})
		}
	}
}
