package rx

import "sync/atomic"

// Using ties a resource to a subscription (Rx.NET's Using, RxJS's using()):
// each subscription calls acquire, subscribes to the observable use builds
// on the resource, and calls release with it exactly once when the
// subscription ends: after the terminal notification has been forwarded, or
// when it is unsubscribed, whichever is first. An error from acquire fails
// the stream at subscription (release is not called: there is nothing to
// release). A nil observable from use fails the stream with an
// *ArgumentError, and the resource is released. If use panics, release runs
// before the panic goes on up. release runs on the goroutine that ends the
// subscription — inside Unsubscribe when that is what ends it, as Finally's
// f and Rx.NET's Dispose do — so it should not block: hand a slow close to
// a goroutine of its own.
func Using[T, R any](acquire func() (R, error), use func(R) Observable[T], release func(R)) Observable[T] {
	mustArg(acquire == nil, "Using", "function acquire")
	mustArg(use == nil, "Using", "function use")
	mustArg(release == nil, "Using", "function release")
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		r, err := acquire()
		if sc.cancelled() {
			if err == nil {
				release(r)
			}
			return sc
		}
		if err != nil {
			down.OnError(err)
			return sc
		}
		u := &usingObserver[T, R]{down: direct(down), sc: sc, r: r, release: release}
		u.h.c = u
		// release runs once the subscription ends, also by a panic in use
		// (the hook runs when sc is cancelled; the defer covers the panic).
		ok := false
		defer func() {
			if !ok {
				u.rxCancel()
			}
		}()
		src := use(r)
		ok = true
		sc.addHook(&u.h)
		if sc.cancelled() {
			return sc
		}
		if src == nil {
			u.OnError(&ArgumentError{Op: "Using", Arg: "use's result", Value: nil, Reason: "must not be a nil Observable"})
			return sc
		}
		subscribeIn[T](src, u, sc)
		return sc
	})
}

type usingObserver[T, R any] struct {
	down    Observer[T]
	sc      *scope
	r       R
	release func(R)
	h       hook
	ran     atomic.Bool
}

func (u *usingObserver[T, R]) rxCancel() {
	if u.ran.CompareAndSwap(false, true) {
		r := u.r
		var zero R
		u.r = zero
		u.release(r)
	}
}

func (u *usingObserver[T, R]) OnNext(v T) { u.down.OnNext(v) }
func (u *usingObserver[T, R]) OnError(err error) {
	defer u.rxCancel() // also when the observer panics: the subscription has ended
	u.down.OnError(err)
}
func (u *usingObserver[T, R]) OnCompleted() {
	defer u.rxCancel() // also when the observer panics
	u.down.OnCompleted()
}
func (u *usingObserver[T, R]) rxScope() *scope { return u.sc }
