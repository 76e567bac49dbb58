package rx

// verdict is the state shared by the operators that end their stream with
// one answer, possibly before their source ends (ElementAt, Single, Find,
// Contains, Every, IsEmpty, SequenceEqual's ...): as Take, the answer goes
// down first and the source is unsubscribed after it, so a Finally above
// runs after the answer; nothing goes down once the subscriber has
// unsubscribed, also from inside the answer's OnNext. Calls into it are
// serialised by its source.
type verdict[R any] struct {
	down Observer[R]
	sc   *scope // downstream's
	up   scope  // the source's; the operator's observer returns it from rxScope
	done bool
}

// start subscribes o, whose rxScope is &v.up, to src.
func startVerdict[T, R any](v *verdict[R], down Observer[R], src Observable[T], o Observer[T]) Subscription {
	v.down, v.sc = direct(down), ensureScope(down)
	v.sc.initChild(&v.up)
	subscribeIn[T](src, o, &v.up)
	return v.sc
}

// answer emits r and completes, then unsubscribes the source.
func (v *verdict[R]) answer(r R) {
	if v.done {
		return
	}
	v.done = true
	defer v.up.cancel() // also when the observer panics
	if !v.sc.cancelled() {
		v.down.OnNext(r)
		if !v.sc.cancelled() {
			v.down.OnCompleted()
		}
	}
}

// fail ends the stream with err, then unsubscribes the source.
func (v *verdict[R]) fail(err error) {
	if v.done {
		return
	}
	v.done = true
	defer v.up.cancel() // also when the observer panics
	if !v.sc.cancelled() {
		v.down.OnError(err)
	}
}

// over reports whether the answer has been given or the subscriber has
// gone: an observer checks it first, and again after each user function.
func (v *verdict[R]) over() bool { return v.done || v.sc.cancelled() }

// complete ends the stream without an answer, then unsubscribes the source.
func (v *verdict[R]) complete() {
	if v.done {
		return
	}
	v.done = true
	defer v.up.cancel() // also when the observer panics
	if !v.sc.cancelled() {
		v.down.OnCompleted()
	}
}
