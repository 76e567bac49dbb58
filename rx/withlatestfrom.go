package rx

// WithLatestFrom emits f(v, o) for each value v of src, o being the latest
// value of other; values of src that arrive before other has emitted are
// dropped. It completes when src completes (other's completion only stops
// the updates) and fails with the first error of either. other is
// subscribed first, so a synchronous other is ready for src's first value.
// It holds one value, other's latest. Both streams' notifications are
// serialised through one stage: one OnNext delivers its own value plus at
// most 64 others'. Rx.NET and RxJS agree on all of this.
func WithLatestFrom[T, O, R any](src Observable[T], other Observable[O], f func(T, O) R) Observable[R] {
	mustArg(f == nil, "WithLatestFrom", "function f")
	if src == nil {
		return nilSource[R]("WithLatestFrom", "src")
	}
	if other == nil {
		return nilSource[R]("WithLatestFrom", "other")
	}
	return observableFunc[R](func(down Observer[R]) Subscription {
		sc := ensureScope(down)
		w := &latestFrom[T, O, R]{down: direct(down), f: f, sc: sc}
		sc.initChild(&w.work)
		w.mb.h = w
		w.work.initChild(&w.other.sc)
		w.work.initChild(&w.main.sc)
		w.other.w, w.main.w = w, w
		subscribeIn[O](other, &w.other, &w.other.sc)
		if !w.work.cancelled() {
			subscribeIn[T](src, &w.main, &w.main.sc)
		}
		return sc
	})
}

type latestEvent[T, O any] struct {
	fromOther bool
	kind      kind
	v         T
	o         O
	err       error
}

type latestFrom[T, O, R any] struct {
	down  Observer[R]
	f     func(T, O) R
	sc    *scope
	work  scope
	mb    mailbox[latestEvent[T, O]]
	other latestOther[T, O, R]
	main  latestMain[T, O, R]

	// owned by the mailbox handler
	latest   O
	has      bool
	finished bool
}

func (w *latestFrom[T, O, R]) handle(e latestEvent[T, O]) {
	if w.finished || w.sc.cancelled() {
		return
	}
	switch e.kind {
	case kindNext:
		if e.fromOther {
			w.latest, w.has = e.o, true
			return
		}
		if !w.has {
			return
		}
		r := w.f(e.v, w.latest)
		if w.sc.cancelled() { // f unsubscribed
			return
		}
		w.down.OnNext(r)
	case kindError:
		w.end()
		w.down.OnError(e.err)
	default:
		if e.fromOther {
			return
		}
		w.end()
		w.down.OnCompleted()
	}
}

func (w *latestFrom[T, O, R]) end() {
	w.finished = true
	var zero O
	w.latest = zero
	w.mb.close()
	w.work.cancel()
}

type latestOther[T, O, R any] struct {
	w  *latestFrom[T, O, R]
	sc scope
}

func (o *latestOther[T, O, R]) OnNext(v O) {
	o.w.mb.post(latestEvent[T, O]{fromOther: true, kind: kindNext, o: v}, &o.sc)
}
func (o *latestOther[T, O, R]) OnError(err error) {
	o.w.mb.postEnd(latestEvent[T, O]{fromOther: true, kind: kindError, err: err})
}
func (o *latestOther[T, O, R]) OnCompleted()    { o.sc.cancel() }
func (o *latestOther[T, O, R]) rxScope() *scope { return &o.sc }

type latestMain[T, O, R any] struct {
	w  *latestFrom[T, O, R]
	sc scope
}

func (m *latestMain[T, O, R]) OnNext(v T) {
	m.w.mb.post(latestEvent[T, O]{kind: kindNext, v: v}, &m.sc)
}
func (m *latestMain[T, O, R]) OnError(err error) {
	m.w.mb.postEnd(latestEvent[T, O]{kind: kindError, err: err})
}
func (m *latestMain[T, O, R]) OnCompleted() {
	m.w.mb.postEnd(latestEvent[T, O]{kind: kindCompleted})
}
func (m *latestMain[T, O, R]) rxScope() *scope { return &m.sc }
