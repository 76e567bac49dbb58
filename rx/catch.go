package rx

// Catch continues with the observable handler returns when src fails. A nil
// observable from handler passes the error on.
func Catch[T any](src Observable[T], handler func(error) Observable[T]) Observable[T] {
	mustArg(handler == nil, "Catch", "function handler")
	if src == nil {
		return nilSource[T]("Catch", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		c := &catchObserver[T]{down: direct(down), sc: sc, handler: handler}
		sc.initChild(&c.up)
		subscribeIn[T](src, c, &c.up)
		return sc
	})
}

type catchObserver[T any] struct {
	down    Observer[T]
	sc      *scope
	handler func(error) Observable[T]
	up      scope // the source's
}

func (c *catchObserver[T]) OnNext(v T) { c.down.OnNext(v) }
func (c *catchObserver[T]) OnCompleted() {
	c.up.cancel()
	c.down.OnCompleted()
}
func (c *catchObserver[T]) OnError(err error) {
	c.up.cancel()
	if c.sc.cancelled() {
		return
	}
	next := c.handler(err)
	if c.sc.cancelled() { // the handler unsubscribed
		return
	}
	if next == nil {
		c.down.OnError(err)
		return
	}
	subscribeIn(next, inScope(c.down, c.sc), c.sc)
}
func (c *catchObserver[T]) rxScope() *scope { return &c.up }
