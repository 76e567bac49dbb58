package rx

// Contains emits true as soon as src emits a value equal to v (src is then
// unsubscribed) and false if src completes without one, as Rx.NET's
// Contains. Equality is Go's ==, so a NaN is never found. Over an
// interface T, a value of another dynamic type than v is unequal to it, as
// for ==; a value that == cannot compare with v (both hold the same
// uncomparable dynamic type, on which == panics) fails the stream with an
// *UncomparableError when it arrives.
func Contains[T comparable](src Observable[T], v T) Observable[bool] {
	if src == nil {
		return nilSource[bool]("Contains", "src")
	}
	check := mayHoldUncomparable[T]()
	return observableFunc[bool](func(down Observer[bool]) Subscription {
		c := &containsObserver[T]{v: v, check: check}
		return startVerdict[T, bool](&c.verdict, down, src, c)
	})
}

type containsObserver[T comparable] struct {
	verdict[bool]
	v     T
	check bool // T may hold values == cannot compare: see mayHoldUncomparable
}

func (c *containsObserver[T]) OnNext(v T) {
	if c.check {
		if c.over() {
			return
		}
		eq, err := equalChecked("Contains", "value", "argument v", v, c.v)
		switch {
		case err != nil:
			c.fail(err)
		case eq:
			c.answer(true)
		}
		return
	}
	if v == c.v {
		c.answer(true)
	}
}
func (c *containsObserver[T]) OnError(err error) { c.fail(err) }
func (c *containsObserver[T]) OnCompleted()      { c.answer(false) }
func (c *containsObserver[T]) rxScope() *scope   { return &c.up }
