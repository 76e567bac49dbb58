package rx

import (
	"sync"
	"sync/atomic"
)

// RetryWhen subscribes to src and, when it fails, passes the error to an
// errors stream and resubscribes when the notifier emits. handler is called
// once per subscription with that errors stream and returns the notifier;
// the notifier is subscribed before src. This is Rx.NET's RetryWhen (RxJS's
// retryWhen agrees): a value of the notifier resubscribes src, its
// completion completes the stream and its error fails it. A value of the
// notifier that arrives while an attempt is running is ignored (this
// package's choice: an attempt is never cut short by the notifier). src's completion completes the stream.
// An error nobody listens for (a notifier that ignores the errors stream)
// leaves the stream waiting for the notifier. Resubscribing a synchronous
// failure does not grow the stack. It holds nothing; the attempts' and the
// notifier's notifications are serialised through one stage (one OnNext
// delivers its own value plus at most 64 others').
func RetryWhen[T, S any](src Observable[T], handler func(errs Observable[error]) Observable[S]) Observable[T] {
	mustArg(handler == nil, "RetryWhen", "function handler")
	if src == nil {
		return nilSource[T]("RetryWhen", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		r := &retryWhen[T, S]{src: src, errs: NewSubject[error]()}
		sc.initChild(&r.work)
		r.out.initStage(down, sc, &r.work)
		notifier := handler(r.errs)
		if r.work.cancelled() { // handler unsubscribed
			return sc
		}
		if notifier == nil {
			r.fail(errNilInner)
			return sc
		}
		r.work.initChild(&r.nsc)
		subscribeIn[S](notifier, (*retrySignal[T, S])(r), &r.nsc)
		r.mu.Lock()
		r.pending = true
		r.mu.Unlock()
		r.pump()
		return sc
	})
}

type retryWhen[T, S any] struct {
	out  serial[T]
	work scope
	nsc  scope
	src  Observable[T]
	errs *Subject[error]
	wip  atomic.Int32

	mu      sync.Mutex
	active  bool // an attempt is subscribed
	pending bool // the notifier asked for an attempt
}

// pump subscribes an attempt when one is asked for and none runs; calls
// made meanwhile (a synchronous failure and a synchronous notifier) are
// folded into the running loop.
func (r *retryWhen[T, S]) pump() {
	if r.wip.Add(1) != 1 {
		return
	}
	finished := false
	defer func() {
		if !finished {
			r.wip.Store(0)
		}
	}()
	for {
		r.mu.Lock()
		start := r.pending && !r.active && !r.work.cancelled()
		if start {
			r.pending, r.active = false, true
		}
		r.mu.Unlock()
		if start {
			a := &retryWhenAttempt[T, S]{r: r}
			r.work.initChild(&a.sc)
			subscribeIn[T](r.src, a, &a.sc)
		}
		if r.wip.Add(-1) == 0 {
			finished = true
			return
		}
	}
}

func (r *retryWhen[T, S]) fail(err error) {
	defer r.work.cancel() // also when the observer panics
	r.out.OnError(err)
}

func (r *retryWhen[T, S]) complete() {
	defer r.work.cancel() // also when the observer panics
	r.out.OnCompleted()
}

// retrySignal is the retryWhen as the notifier's observer.
type retrySignal[T, S any] retryWhen[T, S]

func (s *retrySignal[T, S]) OnNext(S) {
	r := (*retryWhen[T, S])(s)
	r.mu.Lock()
	if r.active {
		r.mu.Unlock()
		return
	}
	r.pending = true
	r.mu.Unlock()
	r.pump()
}
func (s *retrySignal[T, S]) OnError(err error) { (*retryWhen[T, S])(s).fail(err) }
func (s *retrySignal[T, S]) OnCompleted()      { (*retryWhen[T, S])(s).complete() }
func (s *retrySignal[T, S]) rxScope() *scope   { return &s.nsc }

type retryWhenAttempt[T, S any] struct {
	r  *retryWhen[T, S]
	sc scope
}

func (a *retryWhenAttempt[T, S]) OnNext(v T) { a.r.out.OnNext(v) }
func (a *retryWhenAttempt[T, S]) OnError(err error) {
	a.sc.cancel()
	r := a.r
	r.mu.Lock()
	r.active = false
	r.mu.Unlock()
	r.errs.OnNext(err)
}
func (a *retryWhenAttempt[T, S]) OnCompleted() {
	a.sc.cancel()
	a.r.complete()
}
func (a *retryWhenAttempt[T, S]) rxScope() *scope { return &a.sc }
