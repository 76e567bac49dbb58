package rx

// Take forwards the first n values and completes. Its source is unsubscribed
// as soon as the n-th value has been forwarded, so Take over an endless
// synchronous source terminates. n <= 0 completes without subscribing.
func Take[T any](src Observable[T], n int) Observable[T] {
	if src == nil {
		return nilSource[T]("Take", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		if n <= 0 {
			down.OnCompleted()
			return noSubscription{}
		}
		sc := ensureScope(down)
		t := &takeObserver[T]{down: direct(down), left: n, sc: sc}
		sc.initChild(&t.up)
		subscribeIn[T](src, t, &t.up)
		return sc
	})
}

type takeObserver[T any] struct {
	down Observer[T]
	left int
	sc   *scope // downstream's
	up   scope  // the source's
}

// As in Rx.NET, the terminal notification goes down before the source is
// unsubscribed, so a Finally above Take runs after it; and nothing goes down
// once the observer has unsubscribed, even from inside the n-th OnNext.
func (t *takeObserver[T]) OnNext(v T) {
	if t.left <= 0 {
		return
	}
	t.left--
	t.down.OnNext(v)
	if t.left == 0 {
		t.end()
	}
}

// end completes after the n-th value and unsubscribes the source.
func (t *takeObserver[T]) end() {
	defer t.up.cancel() // also when the observer panics
	if !t.sc.cancelled() {
		t.down.OnCompleted()
	}
}

func (t *takeObserver[T]) OnError(err error) {
	if t.left > 0 {
		t.left = 0
		defer t.up.cancel() // also when the observer panics
		if !t.sc.cancelled() {
			t.down.OnError(err)
		}
	}
}

func (t *takeObserver[T]) OnCompleted() {
	if t.left > 0 {
		t.left = 0
		defer t.up.cancel() // also when the observer panics
		if !t.sc.cancelled() {
			t.down.OnCompleted()
		}
	}
}

func (t *takeObserver[T]) rxScope() *scope { return &t.up }

// TakeUntil forwards values from src until stop emits its first value, then
// completes. stop completing without a value does not end the stream.
func TakeUntil[T, S any](src Observable[T], stop Observable[S]) Observable[T] {
	if src == nil {
		return nilSource[T]("TakeUntil", "src")
	}
	if stop == nil {
		return nilSource[T]("TakeUntil", "stop")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		u := &takeUntil[T, S]{work: sc.child()}
		u.out.initStage(down, sc, u.work)
		st := u.work.child()
		subscribeIn[S](stop, &takeUntilStop[T, S]{u: u, sc: st}, st)
		if !u.out.stopped.Load() {
			subscribeIn[T](src, &takeUntilSource[T, S]{u: u}, u.work)
		}
		return sc
	})
}

type takeUntil[T, S any] struct {
	out  serial[T]
	work *scope
}

func (u *takeUntil[T, S]) end(err error) {
	defer u.work.cancel() // also when the observer panics
	if err != nil {
		u.out.OnError(err)
	} else {
		u.out.OnCompleted()
	}
}

type takeUntilSource[T, S any] struct{ u *takeUntil[T, S] }

func (s *takeUntilSource[T, S]) OnNext(v T)        { s.u.out.OnNext(v) }
func (s *takeUntilSource[T, S]) OnError(err error) { s.u.end(err) }
func (s *takeUntilSource[T, S]) OnCompleted()      { s.u.end(nil) }
func (s *takeUntilSource[T, S]) rxScope() *scope   { return s.u.work }

type takeUntilStop[T, S any] struct {
	u  *takeUntil[T, S]
	sc *scope
}

func (s *takeUntilStop[T, S]) OnNext(S)          { s.u.end(nil) }
func (s *takeUntilStop[T, S]) OnError(err error) { s.u.end(err) }
func (s *takeUntilStop[T, S]) OnCompleted()      { s.sc.cancel() }
func (s *takeUntilStop[T, S]) rxScope() *scope   { return s.sc }
