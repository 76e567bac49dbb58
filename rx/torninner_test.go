package rx_test

import (
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
// merger.subscribe, concatMapper.step, exhaustOuter.OnNext and
// flattener.subscribeInner, SelectMany and MergeAll never completed, and
// ConcatMap, ConcatAll, ExhaustMap and SelectManyLimit (one at a time)
// delivered nothing after the panic and never completed.
func TestAnObserverPanickingInsideASynchronousInnerCostsTheValueNotTheStream(t *testing.T) {
	ret := func(v int) rx.Observable[int] { return rx.Return(v) }
	for name, build := range map[string]func(in rx.Observable[int]) rx.Observable[int]{
		"SelectMany":      func(in rx.Observable[int]) rx.Observable[int] { return rx.SelectMany(in, ret) },
		"ConcatMap":       func(in rx.Observable[int]) rx.Observable[int] { return rx.ConcatMap(in, ret) },
		"ExhaustMap":      func(in rx.Observable[int]) rx.Observable[int] { return rx.ExhaustMap(in, ret) },
		"MergeAll":        func(in rx.Observable[int]) rx.Observable[int] { return rx.MergeAll(rx.Map(in, ret)) },
		"ConcatAll":       func(in rx.Observable[int]) rx.Observable[int] { return rx.ConcatAll(rx.Map(in, ret)) },
		"SelectManyLimit": func(in rx.Observable[int]) rx.Observable[int] { return rx.SelectManyLimit(in, ret, 1) },
	} {
		t.Run(name, func(t *testing.T) {
			in := rx.NewSubject[int]()
			rec := rxtest.NewRecorder[int](nil)
			panicked := false
			build(in).Subscribe(rx.NewObserver(func(v int) {
				rec.OnNext(v)
				if v == 2 && !panicked {
					panicked = true
					panic(bug{})
				}
			}, rec.OnError, rec.OnCompleted))
			in.OnNext(1)
			assert.IsType(t, bug{}, recovered(func() { in.OnNext(2) }), "the observer's panic reaches the caller")
			in.OnNext(3)
			in.OnNext(4)
			in.OnCompleted()
			assert.Equal(t, []int{1, 2, 3, 4}, rec.Values())
			assert.True(t, rec.Terminated(), "the stream did not complete")
			assert.NoError(t, rec.Err())
		})
	}
}
