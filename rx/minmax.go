package rx

import "cmp"

// Min emits the smallest value of src once it completes (the first of equal
// ones), ordered as cmp.Compare orders them: a NaN is smaller than every
// number, so a float stream holding one has NaN as its minimum. An empty src
// fails with a *SequenceError wrapping ErrEmpty, as Rx.NET's Min does for a
// non-nullable type (RxJS's min() completes without a value instead). It
// holds one value.
func Min[T cmp.Ordered](src Observable[T]) Observable[T] {
	if src == nil {
		return nilSource[T]("Min", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		m := &extremeObserver[T]{op: "Min", less: true}
		return startVerdict[T, T](&m.verdict, down, src, m)
	})
}

// Max emits the largest value of src once it completes (the first of equal
// ones), ordered as cmp.Compare orders them (a NaN is smaller than every
// number, so it is the maximum only of a stream of NaNs). An empty src fails
// with a *SequenceError wrapping ErrEmpty, as Rx.NET's Max (RxJS's max()
// completes without a value instead). It holds one value.
func Max[T cmp.Ordered](src Observable[T]) Observable[T] {
	if src == nil {
		return nilSource[T]("Max", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		m := &extremeObserver[T]{op: "Max"}
		return startVerdict[T, T](&m.verdict, down, src, m)
	})
}

// The file holds Min and Max: one behaviour, its two directions.
type extremeObserver[T cmp.Ordered] struct {
	verdict[T]
	op   string
	less bool // Min
	best T
	has  bool
}

func (m *extremeObserver[T]) OnNext(v T) {
	switch {
	case !m.has:
		m.best, m.has = v, true
	case m.less && cmp.Less(v, m.best), !m.less && cmp.Less(m.best, v):
		m.best = v
	}
}
func (m *extremeObserver[T]) OnError(err error) { m.fail(err) }
func (m *extremeObserver[T]) OnCompleted() {
	if !m.has {
		m.fail(&SequenceError{Op: m.op, Err: ErrEmpty})
		return
	}
	m.answer(m.best)
}
func (m *extremeObserver[T]) rxScope() *scope { return &m.up }
