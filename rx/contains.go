package rx

// Contains emits true as soon as src emits a value equal to v (src is then
// unsubscribed) and false if src completes without one, as Rx.NET's
// Contains. Equality is Go's ==, so a NaN is never found.
func Contains[T comparable](src Observable[T], v T) Observable[bool] {
	return observableFunc[bool](func(down Observer[bool]) Subscription {
		c := &containsObserver[T]{v: v}
		return startVerdict[T, bool](&c.verdict, down, src, c)
	})
}

type containsObserver[T comparable] struct {
	verdict[bool]
	v T
}

func (c *containsObserver[T]) OnNext(v T) {
	if v == c.v {
		c.answer(true)
	}
}
func (c *containsObserver[T]) OnError(err error) { c.fail(err) }
func (c *containsObserver[T]) OnCompleted()      { c.answer(false) }
func (c *containsObserver[T]) rxScope() *scope   { return &c.up }
