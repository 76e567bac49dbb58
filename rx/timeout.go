package rx

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// Timeout ends the stream with a *TimeoutError when src lets due pass without
// a value: the bound starts at subscription (before src is subscribed) and
// restarts after each value has been forwarded. On expiry src is unsubscribed,
// then the error is delivered. A terminal notification from src disarms it.
// due <= 0 is a bound already spent: the stream fails at once without
// subscribing to src.
//
// Timeout keeps one timer per subscription however many values pass: each
// value records when it was forwarded, and a timer that fires early re-arms
// itself for the remainder, so the error arrives exactly due after the last
// value, never before.
func Timeout[T any](src Observable[T], due time.Duration, clk clock.Clock) Observable[T] {
	mustArg(clk == nil, "Timeout", "clock")
	if src == nil {
		return nilSource[T]("Timeout", "src")
	}
	return TimeoutStage(src, "", due, clk)
}

// TimeoutStage is Timeout whose error names the stage that was waited on,
// e.g. TimeoutStage(read, "instance key", 10*time.Second, clk) fails with
// "instance key: no answer within 10s".
func TimeoutStage[T any](src Observable[T], stage string, due time.Duration, clk clock.Clock) Observable[T] {
	mustArg(clk == nil, "TimeoutStage", "clock")
	if src == nil {
		return nilSource[T]("TimeoutStage", "src")
	}
	return &timeoutObservable[T]{src: src, stage: stage, due: due, clk: clk, mono: isRealClock(clk)}
}

// timeoutObservable is what every subscription's sink shares: the sink
// points at it rather than copying the bound, its stage and its clock.
type timeoutObservable[T any] struct {
	src   Observable[T]
	stage string
	due   time.Duration
	clk   clock.Clock
	mono  bool // clk is the real clock: see stopwatch
}

func (*timeoutObservable[T]) rxNative() {}

func (o *timeoutObservable[T]) Subscribe(down Observer[T]) Subscription {
	mustObserver(down, "Timeout")
	if _, ok := down.(scoped); !ok {
		return subscribeRoot(down, o.subscribe) // see there: a panic out of Subscribe releases the timer
	}
	return o.subscribe(down)
}

func (o *timeoutObservable[T]) subscribe(down Observer[T]) Subscription {
	sc := ensureScope(down)
	if o.due <= 0 {
		down.OnError(&TimeoutError{Stage: o.stage, After: o.due})
		return sc
	}
	t := &timeoutSink[T]{down: direct(down), spec: o, sc: sc, base: o.clk.Now()}
	sc.initChild(&t.up)
	t.hook.c = t
	sc.addHook(&t.hook) // before arming: a cancellation always finds the timer
	t.arm(o.due)
	subscribeIn[T](o.src, (*timeoutObserver[T])(t), &t.up)
	return sc
}

// state packs the offset of the last forwarded value (since subscription)
// with two flags, so the value path is one load, one CAS and one store.
const (
	timeoutEmitting = 1
	timeoutDone     = 2
	timeoutShift    = 2
)

type timeoutSink[T any] struct {
	down  Observer[T]
	spec  *timeoutObservable[T]
	sc    *scope    // downstream's: once cancelled, the timer delivers nothing
	up    scope     // the source's
	hook  hook      // on sc: disarms
	base  time.Time // the subscription's instant on spec.clk
	state atomic.Int64

	mu       sync.Mutex
	fireFn   func() // t.fire, made once: a method value is an allocation
	timer    armedTimer
	disarmed bool
}

// elapsed is the time since subscription (see stopwatch).
func (t *timeoutSink[T]) elapsed() time.Duration { return since(t.spec.clk, t.base, t.spec.mono) }

func (t *timeoutSink[T]) rxCancel() {
	t.disarm()
}

func (t *timeoutSink[T]) arm(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.disarmed {
		return
	}
	if t.fireFn == nil {
		t.fireFn = t.fire
	}
	t.timer = armTimer(t.spec.clk, d, t.fireFn)
}

func (t *timeoutSink[T]) disarm() {
	t.mu.Lock()
	timer := t.timer
	t.disarmed, t.timer = true, armedTimer{}
	t.mu.Unlock()
	timer.stop()
}

func (t *timeoutSink[T]) fire() {
	if t.sc.cancelled() {
		return
	}
	for {
		s := t.state.Load()
		if s&timeoutDone != 0 {
			return
		}
		if s&timeoutEmitting != 0 {
			// A value is being forwarded; the bound restarts after it.
			t.arm(t.spec.due)
			return
		}
		now := t.elapsed()
		deadline := time.Duration(s>>timeoutShift) + t.spec.due
		if now < deadline {
			t.arm(deadline - now)
			return
		}
		if t.state.CompareAndSwap(s, s|timeoutDone) {
			break
		}
	}
	t.disarm()
	t.up.cancel()
	if t.sc.cancelled() { // cancelling the source ran its cleanups
		return
	}
	t.down.OnError(&TimeoutError{Stage: t.spec.stage, After: t.spec.due})
}

func (t *timeoutSink[T]) terminate() bool {
	for {
		s := t.state.Load()
		if s&timeoutDone != 0 {
			return false
		}
		if t.state.CompareAndSwap(s, s|timeoutDone) {
			t.disarm()
			t.up.cancel()
			return true
		}
	}
}

type timeoutObserver[T any] timeoutSink[T]

func (o *timeoutObserver[T]) OnNext(v T) {
	t := (*timeoutSink[T])(o)
	s := t.state.Load()
	if s&timeoutDone != 0 || !t.state.CompareAndSwap(s, s|timeoutEmitting) {
		return
	}
	// Deferred: an observer's panic costs its value, not the bound, which
	// would otherwise find the value still being forwarded at every firing.
	defer t.forwarded()
	t.down.OnNext(v)
}

// forwarded restarts the bound once a value has been forwarded.
func (t *timeoutSink[T]) forwarded() { t.state.Store(int64(t.elapsed()) << timeoutShift) }

func (o *timeoutObserver[T]) OnError(err error) {
	t := (*timeoutSink[T])(o)
	if t.terminate() {
		t.down.OnError(err)
	}
}

func (o *timeoutObserver[T]) OnCompleted() {
	t := (*timeoutSink[T])(o)
	if t.terminate() {
		t.down.OnCompleted()
	}
}

func (o *timeoutObserver[T]) rxScope() *scope { return &o.up }
