package rx_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The conformance table of issue 19: every exported function of package rx
// has an entry, and every entry is run against the same adversarial
// schedule (the rules below). TestEveryExportedRxFunctionHasAConformanceEntry
// fails when a new function has none; TestTheConformanceRulesCatchBrokenOperators
// runs deliberately broken operators through the same rules (their negative
// controls).

// env is what an entry builds its operator over: in and in2 are the sources
// the rules feed (hot subjects, pushed from the rules' goroutines), clk the
// clock of time-based operators, and fn the hook every user function of the
// operator calls with its value (a rule sets it to unsubscribe or panic).
type env struct {
	clk     *rxtest.Clock
	in, in2 *rx.Subject[int]
	hook    atomic.Pointer[func(int)]
}

func newEnv() *env {
	return &env{clk: rxtest.NewClock(), in: rx.NewSubject[int](), in2: rx.NewSubject[int]()}
}

func (e *env) fn(v int) {
	if h := e.hook.Load(); h != nil {
		(*h)(v)
	}
}

func (e *env) setHook(h func(int)) { e.hook.Store(&h) }

// toIn2 is the value whose inner, for the entries that map values to
// streams, is env.in2: an inner that outlives its value and that the rules
// end, so an inner's end meets a live outer and the outer's end a live
// inner.
const toIn2 = 7

// inner is the stream a higher-order entry maps v to: Return(v), or env.in2
// for toIn2.
func (e *env) inner(v int) rx.Observable[int] {
	if v == toIn2 {
		return e.in2
	}
	return rx.Return(v)
}

// flags say which rules apply to an entry, and why others do not.
type flags uint16

const (
	// input: the operator consumes env.in (and env.in2); the rules push
	// into it. Constructors without an input get the rules that need none.
	input flags = 1 << iota
	// userFn: a user function of the operator calls env.fn with each value
	// (so a rule can unsubscribe or panic from inside it).
	userFn
	// timed: the operator waits on env.clk; the rules advance it.
	timed
	// atEnd: the operator emits only when its input ends (Reduce, Count,
	// TakeLast, ...), so a consumer cannot be blocked by a value before.
	atEnd
	// holds: the operator holds values by its meaning (ConcatMap's queue,
	// Zip2's side ahead, Delay, BufferTime's window): the transit bound of
	// the memory rule does not apply; its own documented bound does, which
	// the bound table (conformance_bounds_test.go) states and measures.
	holds
	// consumer: All, First, Collect: checked for honouring ctx.
	consumer
	// helper: not a stream (NewObserver): only listed, and checked for nils.
	helper
	// ownGoroutine: the operator delivers on a goroutine it starts from a
	// channel the user owns (FromChannel): a panic there is that
	// goroutine's and ends the program, as any goroutine's panic does (no
	// caller can recover it); and an observer that sends into the channel
	// its own reader would receive deadlocks as any unbuffered channel
	// does. The panic and re-entrancy rules do not apply.
	ownGoroutine
)

type entry struct {
	name  string
	flags flags
	build func(e *env) rx.Observable[int] // nil for consumers and helpers
	nils  []func()                        // each must panic naming "rx.<name>: nil"
	// consume runs a consumer (All, First, Collect) over src under ctx.
	consume func(ctx context.Context, src rx.Observable[int]) error
	// release, closed, lets a negative control's stuck goroutines go.
	release <-chan struct{}
}

func (x entry) has(f flags) bool { return x.flags&f != 0 }

// lastOf maps each buffer to its last value (-1 for an empty one).
func lastOf(src rx.Observable[[]int]) rx.Observable[int] {
	return rx.Map(src, func(b []int) int {
		if len(b) == 0 {
			return -1
		}
		return b[len(b)-1]
	})
}

// oneMilli is the period of the time-based entries; settle is how far the
// rules move the clock to let them deliver what they hold (a few periods,
// not more: an Interval fires once per period).
const (
	oneMilli = time.Millisecond
	settle   = 50 * oneMilli
)

// subjectOver feeds s from e.in and returns it.
func subjectOver(e *env, s interface {
	rx.Observer[int]
	rx.Observable[int]
}) rx.Observable[int] {
	e.in.Subscribe(s)
	return s
}

// table lists every exported function of package rx.
func table() []entry {
	return append(append(append(tableBase(), tableOps1()...), tableOps2()...), tableAny()...)
}
func tableBase() []entry {
	return []entry{
		{name: "All", flags: consumer, consume: func(ctx context.Context, src rx.Observable[int]) error {
			for _, err := range rx.All(ctx, src) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "First", flags: consumer, consume: func(ctx context.Context, src rx.Observable[int]) error {
			_, err := rx.First(ctx, src)
			return err
		}},
		{name: "Collect", flags: consumer, consume: func(ctx context.Context, src rx.Observable[int]) error {
			_, err := rx.Collect(ctx, src)
			return err
		}},
		{name: "NewObserver", flags: helper},

		{name: "Return", build: func(*env) rx.Observable[int] { return rx.Return(1) }},
		{name: "Of", build: func(*env) rx.Observable[int] { return rx.Of(1, 2, 3) }},
		{name: "Range", build: func(*env) rx.Observable[int] { return rx.Range(0, 1000) }},
		{name: "Empty", build: func(*env) rx.Observable[int] { return rx.Empty[int]() }},
		{name: "Never", build: func(*env) rx.Observable[int] { return rx.Never[int]() }},
		{name: "Throw", build: func(*env) rx.Observable[int] { return rx.Throw[int](rxtest.ErrTest) }},
		{name: "FromSeq", build: func(*env) rx.Observable[int] {
			return rx.FromSeq(func(yield func(int) bool) {
				for i := range 1000 {
					if !yield(i) {
						return
					}
				}
			})
		}},
		{name: "FromChannel", flags: input | ownGoroutine, build: func(e *env) rx.Observable[int] {
			// env.in feeds the channel; a push waits until FromChannel has
			// received it (the channel carries the back-pressure) or the
			// subscription has ended. The subject never calls the bridge
			// twice at once, so closing the channel at its end is safe.
			ch := make(chan int)
			done := make(chan struct{})
			var once sync.Once
			e.in.Subscribe(rx.NewObserver(func(v int) {
				select {
				case ch <- v:
				case <-done:
				}
			}, func(error) { close(ch) }, func() { close(ch) }))
			return rx.Finally(rx.FromChannel(ch), func() { once.Do(func() { close(done) }) })
		}},
		{name: "Create", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.Create(func(ctx context.Context, o rx.Observer[int]) {
				e.fn(0)
				sub := e.in.Subscribe(o)
				context.AfterFunc(ctx, sub.Unsubscribe)
			})
		}, nils: []func(){func() { rx.Create[int](nil) }}},
		{name: "Defer", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.Defer(func() rx.Observable[int] { return e.in })
		}, nils: []func(){func() { rx.Defer[int](nil) }}},
		{name: "Interval", flags: timed, build: func(e *env) rx.Observable[int] { return rx.Interval(oneMilli, e.clk) },
			nils: []func(){func() { rx.Interval(oneMilli, nil) }}},
		{name: "Timer", flags: timed, build: func(e *env) rx.Observable[int] {
			return rx.Map(rx.Timer(oneMilli, e.clk), func(time.Time) int { return 1 })
		}, nils: []func(){func() { rx.Timer(oneMilli, nil) }}},

		{name: "NewSubject", flags: input, build: func(e *env) rx.Observable[int] { return subjectOver(e, rx.NewSubject[int]()) }},
		{name: "NewBehaviorSubject", flags: input, build: func(e *env) rx.Observable[int] {
			return subjectOver(e, rx.NewBehaviorSubject(0))
		}},
		{name: "NewReplaySubject", flags: input, build: func(e *env) rx.Observable[int] {
			return subjectOver(e, rx.NewReplaySubject[int](4))
		}},
		{name: "NewAsyncSubject", flags: input | atEnd, build: func(e *env) rx.Observable[int] {
			return subjectOver(e, rx.NewAsyncSubject[int]())
		}},

		{name: "Map", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.Map(e.in, func(v int) int { e.fn(v); return v })
		}, nils: []func(){func() { rx.Map[int, int](rx.Never[int](), nil) }}},
		{name: "Filter", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.Filter(e.in, func(v int) bool { e.fn(v); return true })
		}, nils: []func(){func() { rx.Filter(rx.Never[int](), nil) }}},
		{name: "Scan", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.Scan(e.in, 0, func(_, v int) int { e.fn(v); return v })
		}, nils: []func(){func() { rx.Scan[int, int](rx.Never[int](), 0, nil) }}},
		{name: "Reduce", flags: input | userFn | atEnd, build: func(e *env) rx.Observable[int] {
			return rx.Reduce(e.in, 0, func(a, v int) int { e.fn(v); return a + v })
		}, nils: []func(){func() { rx.Reduce[int, int](rx.Never[int](), 0, nil) }}},
		{name: "Do", flags: input | userFn, build: func(e *env) rx.Observable[int] { return rx.Do(e.in, e.fn) },
			nils: []func(){func() { rx.Do(rx.Never[int](), nil) }}},
		{name: "TakeWhile", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.TakeWhile(e.in, func(v int) bool { e.fn(v); return true })
		}, nils: []func(){func() { rx.TakeWhile(rx.Never[int](), nil) }}},
		{name: "SkipWhile", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.SkipWhile(e.in, func(v int) bool { e.fn(v); return v < 0 })
		}, nils: []func(){func() { rx.SkipWhile(rx.Never[int](), nil) }}},
		{name: "CombineLatest2", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.CombineLatest2(e.in, rx.Return(0), func(v, _ int) int { e.fn(v); return v })
		}, nils: []func(){func() { rx.CombineLatest2[int, int, int](rx.Never[int](), rx.Never[int](), nil) }}},
		{name: "Zip2", flags: input | userFn | holds, build: func(e *env) rx.Observable[int] {
			return rx.Zip2(e.in, rx.Range(0, 10_000), func(v, _ int) int { e.fn(v); return v })
		}, nils: []func(){func() { rx.Zip2[int, int, int](rx.Never[int](), rx.Never[int](), nil) }}},
		{name: "SelectMany", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.SelectMany(e.in, func(v int) rx.Observable[int] { e.fn(v); return e.inner(v) })
		}, nils: []func(){func() { rx.SelectMany[int, int](rx.Never[int](), nil) }}},
		{name: "ConcatMap", flags: input | userFn | holds, build: func(e *env) rx.Observable[int] {
			return rx.ConcatMap(e.in, func(v int) rx.Observable[int] { e.fn(v); return e.inner(v) })
		}, nils: []func(){func() { rx.ConcatMap[int, int](rx.Never[int](), nil) }}},
		{name: "SwitchMap", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.SwitchMap(e.in, func(v int) rx.Observable[int] { e.fn(v); return e.inner(v) })
		}, nils: []func(){func() { rx.SwitchMap[int, int](rx.Never[int](), nil) }}},
		{name: "ExhaustMap", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rx.ExhaustMap(e.in, func(v int) rx.Observable[int] { e.fn(v); return e.inner(v) })
		}, nils: []func(){func() { rx.ExhaustMap[int, int](rx.Never[int](), nil) }}},
		{name: "Catch", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.Catch(e.in, func(error) rx.Observable[int] { return rx.Return(-1) })
		}, nils: []func(){func() { rx.Catch(rx.Never[int](), nil) }}},
		// f releases what the subscription holds: a subscription to env.in2,
		// made when it starts, so the rules see whether f has run.
		{name: "Finally", flags: input, build: func(e *env) rx.Observable[int] {
			return rx.Defer(func() rx.Observable[int] {
				held := e.in2.Subscribe(rx.NewObserver[int](nil, nil, nil))
				return rx.Finally(e.in, held.Unsubscribe)
			})
		},
			nils: []func(){func() { rx.Finally(rx.Never[int](), nil) }}},
		{name: "Merge", flags: input, build: func(e *env) rx.Observable[int] { return rx.Merge[int](e.in, e.in2) }},
		{name: "Concat", flags: input, build: func(e *env) rx.Observable[int] { return rx.Concat[int](e.in, e.in2) }},
		{name: "StartWith", flags: input, build: func(e *env) rx.Observable[int] { return rx.StartWith[int](e.in, -1) }},
		{name: "Share", flags: input, build: func(e *env) rx.Observable[int] { return rx.Share[int](e.in) }},
		{name: "Take", flags: input, build: func(e *env) rx.Observable[int] { return rx.Take[int](e.in, 1_000_000) }},
		{name: "TakeUntil", flags: input, build: func(e *env) rx.Observable[int] { return rx.TakeUntil[int, int](e.in, e.in2) }},
		{name: "TakeLast", flags: input | atEnd, build: func(e *env) rx.Observable[int] { return rx.TakeLast[int](e.in, 3) }},
		{name: "Skip", flags: input, build: func(e *env) rx.Observable[int] { return rx.Skip[int](e.in, 1) }},
		{name: "Distinct", flags: input, build: func(e *env) rx.Observable[int] { return rx.Distinct[int](e.in) }},
		{name: "DistinctUntilChanged", flags: input, build: func(e *env) rx.Observable[int] { return rx.DistinctUntilChanged[int](e.in) }},
		{name: "DefaultIfEmpty", flags: input, build: func(e *env) rx.Observable[int] { return rx.DefaultIfEmpty[int](e.in, -1) }},
		{name: "Count", flags: input | atEnd, build: func(e *env) rx.Observable[int] { return rx.Count[int](e.in) }},
		{name: "BufferCount", flags: input, build: func(e *env) rx.Observable[int] { return lastOf(rx.BufferCount[int](e.in, 2)) }},
		{name: "Retry", flags: input, build: func(e *env) rx.Observable[int] { return rx.Retry[int](e.in, 2) }},
		{name: "RetryBackoff", flags: input | timed, build: func(e *env) rx.Observable[int] {
			return rx.RetryBackoff[int](e.in, 2, oneMilli, 10*oneMilli, e.clk)
		}, nils: []func(){func() { rx.RetryBackoff(rx.Never[int](), 2, oneMilli, oneMilli, nil) }}},
		{name: "Timeout", flags: input | timed, build: func(e *env) rx.Observable[int] { return rx.Timeout[int](e.in, time.Hour, e.clk) },
			nils: []func(){func() { rx.Timeout(rx.Never[int](), time.Second, nil) }}},
		{name: "TimeoutStage", flags: input | timed, build: func(e *env) rx.Observable[int] {
			return rx.TimeoutStage[int](e.in, "stage", time.Hour, e.clk)
		}, nils: []func(){func() { rx.TimeoutStage(rx.Never[int](), "s", time.Second, nil) }}},
		{name: "Throttle", flags: input | timed, build: func(e *env) rx.Observable[int] { return rx.Throttle[int](e.in, oneMilli, e.clk) },
			nils: []func(){func() { rx.Throttle(rx.Never[int](), time.Second, nil) }}},
		{name: "Debounce", flags: input | timed | holds, build: func(e *env) rx.Observable[int] { return rx.Debounce[int](e.in, oneMilli, e.clk) },
			nils: []func(){func() { rx.Debounce(rx.Never[int](), time.Second, nil) }}},
		{name: "Delay", flags: input | timed | holds, build: func(e *env) rx.Observable[int] { return rx.Delay[int](e.in, oneMilli, e.clk) },
			nils: []func(){func() { rx.Delay(rx.Never[int](), time.Second, nil) }}},
		{name: "BufferTime", flags: input | timed | holds, build: func(e *env) rx.Observable[int] {
			return lastOf(rx.BufferTime[int](e.in, oneMilli, e.clk))
		}, nils: []func(){func() { rx.BufferTime(rx.Never[int](), time.Second, nil) }}},
	}
}

// reporter is what a rule reports to: the test, or (for the negative
// controls) a collector that only counts.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

type collector struct {
	mu   sync.Mutex
	errs []string
}

func (c *collector) Helper() {}
func (c *collector) Errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

func (c *collector) failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.errs) > 0
}

// cprobe (a conformance probe) observes an operator under test: it records what arrives, flags
// grammar violations (overlapping calls, anything after a terminal
// notification), and runs onNext (a rule's hook) before recording a value.
type cprobe struct {
	in      atomic.Bool
	onNext  func(v int)
	mu      sync.Mutex
	events  []string
	ended   bool
	bad     []string
	entered chan struct{} // closed at the first value
	once    sync.Once
}

func newCprobe() *cprobe { return &cprobe{entered: make(chan struct{})} }

func (p *cprobe) note(kind string, v int) {
	if !p.in.CompareAndSwap(false, true) {
		p.mu.Lock()
		p.bad = append(p.bad, kind+" overlapped another call")
		p.mu.Unlock()
	} else {
		defer p.in.Store(false)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		p.bad = append(p.bad, fmt.Sprintf("%s(%d) after the end", kind, v))
	}
	if kind != "next" {
		p.ended = true
	}
	p.events = append(p.events, fmt.Sprintf("%s(%d)", kind, v))
}

func (p *cprobe) OnNext(v int) {
	p.note("next", v)
	if p.onNext != nil {
		p.onNext(v) // after recording: a value the hook unsubscribes in has arrived
	}
}
func (p *cprobe) OnError(error) { p.note("error", 0) }
func (p *cprobe) OnCompleted()  { p.note("completed", 0) }

func (p *cprobe) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.events)
}

func (p *cprobe) violations() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.bad)
}

// bounded runs f and reports if it has not returned within hangBound(r) of
// real time (the rules' failure mode is often a deadlock). It reports
// whether f returned.
func bounded(r reporter, what string, f func()) bool {
	r.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	bound := hangBound(r)
	select {
	case <-done:
		return true
	case <-time.After(bound):
		r.Errorf("%s: still blocked after %s", what, bound)
		return false
	}
}

// hangBound is how long a rule waits for what must happen before it calls
// it a deadlock. Over the real operators it is a ceiling a passing run
// never comes near (at 1s, a loaded machine could reach it). The negative
// controls, run into a collector, deadlock on purpose and would spend it
// whole each time: for them a second shows the deadlock as well.
func hangBound(r reporter) time.Duration {
	if _, control := r.(*collector); control {
		return time.Second
	}
	return 10 * time.Second
}

// rule is one line of the adversarial schedule.
type rule struct {
	name    string
	applies func(x entry) bool
	check   func(r reporter, x entry)
}

func isStream(x entry) bool { return x.build != nil }

func rules() []rule {
	return []rule{
		{"grammar under concurrent termination", isStream, ruleGrammar},
		{"nothing after Unsubscribe returned on another goroutine", isStream, ruleUnsubscribeFromAnotherGoroutine},
		{"nothing after Unsubscribe inside a user function or the observer", isStream, ruleUnsubscribeInside},
		{"nothing after Unsubscribe by a timer at the same instant", func(x entry) bool { return x.has(timed) }, ruleTimerSameInstant},
		{"a panicking user function reaches the caller and leaves the source usable", func(x entry) bool { return x.has(input) && !x.has(ownGoroutine) }, rulePanic},
		{"re-entrant calls into the source do not deadlock", func(x entry) bool { return x.has(input) && !x.has(atEnd|ownGoroutine) }, ruleReentrant},
		{"a blocked consumer bounds memory", func(x entry) bool { return x.has(input) && !x.has(atEnd|holds|timed) }, ruleMemory},
		{"ctx is honoured", func(x entry) bool { return x.has(consumer) }, ruleContext},
		{"nil arguments panic naming the argument", func(x entry) bool { return len(x.nils) > 0 }, ruleNils},
		{fusedRuleName, isFusable, ruleFusedAndUnfusedAlike},
		{"a value reaches the caller's observer in one call", isStream, ruleOneCallToTheCaller},
		{"a panic out of the observer leaves nothing subscribed once unsubscribed", func(x entry) bool { return x.has(input) && !x.has(ownGoroutine) }, ruleReleasedAfterPanic},
		{"Unsubscribe inside the end neither deadlocks nor leaves anything", func(x entry) bool { return x.has(input) && !x.has(ownGoroutine) }, ruleUnsubscribeInsideTheEnd},
		{"a panicking user function loses its value, not the stream", func(x entry) bool { return x.has(input) && x.has(userFn) && !x.has(ownGoroutine) }, ruleGoesOnAfterAFunctionPanicked},
		{"an observer panicking at the end leaves nothing subscribed", func(x entry) bool { return x.has(input) && !x.has(ownGoroutine) }, ruleReleasedAfterAPanicAtTheEnd},
	}
}

// ruleReleasedAfterPanic: once a subscription whose observer panicked has
// ended, nothing the operator subscribed or armed is left: no observer on
// either input (Subject.HasObservers), no timer on the clock. Negative
// control (run): ForgetsItsSourceWhenItsObserverPanics, in
// TestTheConformanceRulesCatchBrokenOperators.
func ruleReleasedAfterPanic(r reporter, x entry) {
	r.Helper()
	e := newEnv()
	p := newCprobe()
	var panicked atomic.Bool
	p.onNext = func(v int) {
		if panicked.CompareAndSwap(false, true) {
			panic(bug{})
		}
	}
	src := x.build(e)
	// What the entry subscribed before the caller did (a subject over an
	// input) is not the subscription's.
	base, base2 := e.in.HasObservers(), e.in2.HasObservers()
	var sub rx.Subscription
	recovered(func() { sub = src.Subscribe(p) }) // a source may deliver inside Subscribe
	for v := 1; v <= 3; v++ {
		recovered(func() {
			e.in.OnNext(v)
			e.in2.OnNext(v)
			e.clk.Advance(oneMilli)
		})
	}
	recovered(func() { e.clk.Advance(settle) })
	if sub != nil {
		sub.Unsubscribe()
	}
	if e.in.HasObservers() != base || e.in2.HasObservers() != base2 {
		r.Errorf("%s: an input is still subscribed after a panic and Unsubscribe (in: %v, in2: %v)", x.name, e.in.HasObservers(), e.in2.HasObservers())
	}
	if n := e.clk.Pending(); n > 0 {
		r.Errorf("%s: %d timers left on the clock after a panic and Unsubscribe", x.name, n)
	}
}

// ruleReleasedAfterAPanicAtTheEnd: a subscription that has delivered its
// terminal notification has ended, also when the observer panicked in it:
// what the operator subscribed or armed is released then, not only at a
// later Unsubscribe the caller may never make (Rx.NET disposes in a finally
// around the terminal call). Each way an entry can end is tried: either
// input failing or completing first, with an inner on env.in2 live
// (toIn2). Negative control (run): ReleasesTheOtherInputAfterItsError, in
// TestTheConformanceRulesCatchBrokenOperators; before they deferred their
// release (f79096e's parent), Merge, SelectMany, ConcatMap, ExhaustMap,
// MergeAll, ConcatAll, SelectManyLimit, Expand, RetryWhen, TakeUntil,
// ElementAt, Single, Find and IsEmpty failed here; and, before they deferred
// their cleanup (entries whose cleanup releases env.in2), Finally and Using.
func ruleReleasedAfterAPanicAtTheEnd(r reporter, x entry) {
	r.Helper()
	type end func(e *env)
	fail := func(s func(e *env) *rx.Subject[int]) end { return func(e *env) { s(e).OnError(rxtest.ErrTest) } }
	complete := func(s func(e *env) *rx.Subject[int]) end { return func(e *env) { s(e).OnCompleted() } }
	in := func(e *env) *rx.Subject[int] { return e.in }
	in2 := func(e *env) *rx.Subject[int] { return e.in2 }
	for name, ends := range map[string][]end{
		"in fails":               {fail(in), fail(in2)},
		"in2 fails":              {fail(in2), fail(in)},
		"in completes, then in2": {complete(in), complete(in2)},
		"in2 completes, then in": {complete(in2), complete(in)},
	} {
		e := newEnv()
		p := newCprobe()
		var panicked atomic.Bool
		end := func(kind string) {
			p.note(kind, 0)
			if panicked.CompareAndSwap(false, true) {
				panic(bug{})
			}
		}
		o := rx.NewObserver(p.OnNext, func(error) { end("error") }, func() { end("completed") })
		src := x.build(e)
		base, base2 := e.in.HasObservers(), e.in2.HasObservers()
		var sub rx.Subscription
		recovered(func() { sub = src.Subscribe(o) })
		steps := []func(){
			func() { e.in.OnNext(1); e.in2.OnNext(1) },
			func() { e.in.OnNext(toIn2) },
			func() { e.clk.Advance(oneMilli) },
		}
		for _, end := range ends {
			steps = append(steps, func() { end(e) }, func() { e.clk.Advance(settle) })
		}
		checked := false
		for _, step := range steps {
			recovered(step)
			if !panicked.Load() || checked {
				continue
			}
			checked = true
			// What the entry subscribed before the caller did (a subject
			// over an input) ends with that input, not here.
			if (e.in.HasObservers() && !base) || (e.in2.HasObservers() && !base2) {
				r.Errorf("%s, %s: an input is still subscribed after the observer panicked at the end (in: %v, in2: %v)", x.name, name, e.in.HasObservers(), e.in2.HasObservers())
			}
			if n := e.clk.Pending(); n > 0 {
				r.Errorf("%s, %s: %d timers left on the clock after the observer panicked at the end", x.name, name, n)
			}
		}
		if sub != nil {
			sub.Unsubscribe()
		}
		if v := p.violations(); len(v) > 0 {
			r.Errorf("%s, %s: grammar broken: %v", x.name, name, v)
		}
	}
}

// ruleUnsubscribeInsideTheEnd: an observer that unsubscribes from inside
// OnError or OnCompleted (a consumer tidying up as it ends) neither
// deadlocks with the operator's own ending nor leaves anything subscribed
// or armed, and gets nothing after. Each way an entry can end is tried, as
// in ruleReleasedAfterAPanicAtTheEnd. Negative control (run):
// LocksAroundItsEnd, in TestTheConformanceRulesCatchBrokenOperators.
func ruleUnsubscribeInsideTheEnd(r reporter, x entry) {
	r.Helper()
	for _, failFirst := range []bool{false, true} {
		for _, in2First := range []bool{false, true} {
			e := newEnv()
			p := newCprobe()
			var sub atomic.Pointer[rx.Subscription]
			unsub := func() {
				if s := sub.Load(); s != nil {
					(*s).Unsubscribe()
				}
			}
			o := rx.NewObserver(p.OnNext, func(err error) { p.OnError(err); unsub() }, func() { p.OnCompleted(); unsub() })
			src := x.build(e)
			base, base2 := e.in.HasObservers(), e.in2.HasObservers()
			s := src.Subscribe(o)
			sub.Store(&s)
			first, second := e.in, e.in2
			if in2First {
				first, second = e.in2, e.in
			}
			what := fmt.Sprintf("%s (failing: %v, in2 first: %v)", x.name, failFirst, in2First)
			if !bounded(r, what+": unsubscribing inside the end", func() {
				e.in.OnNext(1)
				e.in2.OnNext(1)
				e.in.OnNext(toIn2)
				e.clk.Advance(oneMilli)
				for _, sj := range []*rx.Subject[int]{first, second} {
					if failFirst {
						sj.OnError(rxtest.ErrTest)
					} else {
						sj.OnCompleted()
					}
					e.clk.Advance(settle)
				}
			}) {
				return
			}
			if (e.in.HasObservers() && !base) || (e.in2.HasObservers() && !base2) {
				r.Errorf("%s: an input is still subscribed (in: %v, in2: %v)", what, e.in.HasObservers(), e.in2.HasObservers())
			}
			if n := e.clk.Pending(); n > 0 {
				r.Errorf("%s: %d timers left on the clock", what, n)
			}
			s.Unsubscribe()
			if v := p.violations(); len(v) > 0 {
				r.Errorf("%s: grammar broken: %v", what, v)
			}
		}
	}
}

// ruleGoesOnAfterAFunctionPanicked: a user function's panic goes up to the
// caller of OnNext and costs the value it was called with, nothing more:
// the subscription stays live (as a panicking observer's does), so the
// values after it are delivered and the stream ends as it would have. The
// schedule is run without the panic and with it (at value 2, once); the
// run with it must end the same way, short of at most the one value.
// Negative control (run): StaysBusyAfterItsFunctionPanicked, in
// TestTheConformanceRulesCatchBrokenOperators; ConcatMap and ExhaustMap,
// whose busy flag a panicking f left set, failed here (nothing after the
// panic, no completion) before they reset it.
func ruleGoesOnAfterAFunctionPanicked(r reporter, x entry) {
	r.Helper()
	run := func(panics bool) (events []string, panicked bool) {
		e := newEnv()
		p := newCprobe()
		var once atomic.Bool
		e.setHook(func(v int) {
			if panics && v == 2 && once.CompareAndSwap(false, true) {
				panic(bug{})
			}
		})
		x.build(e).Subscribe(p)
		e.in.OnNext(1)
		recovered(func() { e.in.OnNext(2); e.clk.Advance(settle) })
		e.in.OnNext(3)
		e.in.OnNext(4)
		e.clk.Advance(settle)
		finish(e)
		p.mu.Lock()
		defer p.mu.Unlock()
		return slices.Clone(p.events), once.Load()
	}
	want, _ := run(false)
	got, panicked := run(true)
	if !panicked {
		return // the function never saw 2 (an operator answering at 1)
	}
	last := func(ev []string) string {
		if len(ev) == 0 {
			return "nothing"
		}
		return ev[len(ev)-1]
	}
	if last(got) != last(want) || len(got) < len(want)-1 {
		r.Errorf("%s: without the panic %v; after a user function panicked at 2: %v", x.name, want, got)
	}
}

// ruleOneCallToTheCaller: the caller's own observer is called by the
// operator (or the source, or a fused loop), not through a forward, which
// only carries the chain's scope (subscribeRoot's): such a hop is one more
// interface call per value (B12: +1.1 ns, +40 % for a cheap operator).
// Negative control (run): OnErrorReturn keeping the forward it is given
// fails here.
func ruleOneCallToTheCaller(r reporter, x entry) {
	r.Helper()
	e := newEnv()
	p := newCprobe()
	var mu sync.Mutex
	var hops []string
	p.onNext = func(int) {
		var pcs [4]uintptr
		n := runtime.Callers(3, pcs[:]) // above the hook and cprobe.OnNext
		frames := runtime.CallersFrames(pcs[:n])
		f, _ := frames.Next()
		if strings.Contains(f.Function, "rx.(*forward[") {
			mu.Lock()
			hops = append(hops, f.Function)
			mu.Unlock()
		}
	}
	sub := x.build(e).Subscribe(p)
	for v := 1; v <= 3; v++ {
		e.in.OnNext(v)
		e.in2.OnNext(v)
		e.clk.Advance(oneMilli)
	}
	finish(e)
	sub.Unsubscribe()
	mu.Lock()
	defer mu.Unlock()
	if len(hops) > 0 {
		r.Errorf("%s: %d values reached the observer through %s", x.name, len(hops), hops[0])
	}
}

// finish ends env's inputs and moves its clock far on, so that every
// operator has delivered what it holds.
func finish(e *env) {
	e.in.OnCompleted()
	e.in2.OnCompleted()
	e.clk.Advance(settle)
}

func ruleGrammar(r reporter, x entry) {
	r.Helper()
	for _, end := range []func(s *rx.Subject[int]){
		func(s *rx.Subject[int]) { s.OnCompleted() },
		func(s *rx.Subject[int]) { s.OnError(rxtest.ErrTest) },
	} {
		e := newEnv()
		p := newCprobe()
		x.build(e).Subscribe(p)
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Go(func() {
				for i := range 200 {
					e.in.OnNext(g*1000 + i)
					e.in2.OnNext(g*1000 + i)
				}
			})
		}
		wg.Go(func() { end(e.in); end(e.in2) })
		wg.Go(func() {
			for range 20 {
				e.clk.Advance(oneMilli)
			}
		})
		if !bounded(r, x.name+": producers and the end", wg.Wait) {
			return
		}
		finish(e)
		if v := p.violations(); len(v) > 0 {
			r.Errorf("%s: grammar broken: %v", x.name, v)
		}
	}
}

func ruleUnsubscribeFromAnotherGoroutine(r reporter, x entry) {
	r.Helper()
	e := newEnv()
	p := newCprobe()
	sub := x.build(e).Subscribe(p)
	stop := make(chan struct{})
	var producer sync.WaitGroup
	producer.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e.in.OnNext(i)
			e.in2.OnNext(i)
			if i%16 == 0 {
				e.clk.Advance(oneMilli)
			}
		}
	})
	for range 50 {
		runtime.Gosched()
	}
	sub.Unsubscribe()
	n := p.count()
	close(stop)
	if !bounded(r, x.name+": the producer after Unsubscribe", producer.Wait) {
		return
	}
	// What starts now starts after Unsubscribe returned.
	for i := range 5 {
		e.in.OnNext(-i)
	}
	finish(e)
	// One notification may have been in flight when Unsubscribe was called.
	if got := p.count(); got > n+1 {
		p.mu.Lock()
		r.Errorf("%s: %d notifications after Unsubscribe returned: %v", x.name, got-n, p.events[n:])
		p.mu.Unlock()
	}
}

func ruleUnsubscribeInside(r reporter, x entry) {
	r.Helper()
	for _, who := range whoCalls(x) {
		e := newEnv()
		p := newCprobe()
		var sub atomic.Pointer[rx.Subscription]
		var at atomic.Int64
		at.Store(-1)
		unsub := func() {
			if s := sub.Load(); s != nil && at.Load() < 0 {
				(*s).Unsubscribe()
				at.Store(int64(p.count()))
			}
		}
		if who == "a user function" {
			e.setHook(func(v int) {
				if v == 2 {
					unsub()
				}
			})
		} else {
			p.onNext = func(int) { unsub() }
		}
		s := x.build(e).Subscribe(p)
		sub.Store(&s)
		// A synchronous constructor delivers inside Subscribe, before its
		// subscription exists (unsub does nothing then): for it the rule
		// checks only what a timer or a later push delivers.
		for v := 1; v <= 3; v++ {
			e.in.OnNext(v)
			e.clk.Advance(oneMilli)
		}
		finish(e)
		if n := at.Load(); n >= 0 && int64(p.count()) > n {
			p.mu.Lock()
			r.Errorf("%s: delivered %v after %s unsubscribed", x.name, p.events[n:], who)
			p.mu.Unlock()
		}
	}
}

func ruleTimerSameInstant(r reporter, x entry) {
	r.Helper()
	e := newEnv()
	p := newCprobe()
	var sub rx.Subscription
	var at atomic.Int64
	at.Store(-1)
	// Scheduled before the operator arms anything: first on the instant.
	e.clk.Schedule(oneMilli, func() { sub.Unsubscribe(); at.Store(int64(p.count())) })
	sub = x.build(e).Subscribe(p)
	e.in.OnNext(1)
	e.clk.Advance(settle)
	if n := at.Load(); n < 0 {
		r.Errorf("%s: the unsubscribing timer did not run", x.name)
	} else if int64(p.count()) > n {
		r.Errorf("%s: delivered after a timer unsubscribed at the same instant", x.name)
	}
}

type bug struct{}

func rulePanic(r reporter, x entry) {
	r.Helper()
	e := newEnv()
	p := newCprobe()
	var panicked atomic.Bool // once: the rule then checks what follows
	if x.has(userFn) {
		e.setHook(func(v int) {
			if v == 2 && panicked.CompareAndSwap(false, true) {
				panic(bug{})
			}
		})
	} else {
		p.onNext = func(v int) {
			if v == 2 && panicked.CompareAndSwap(false, true) {
				panic(bug{})
			}
		}
	}
	x.build(e).Subscribe(p)
	e.in.OnNext(1)
	got := recovered(func() {
		e.in.OnNext(2)
		e.clk.Advance(settle) // a timed operator delivers here
	})
	if got != nil {
		if _, ok := got.(bug); !ok {
			r.Errorf("%s: the caller recovered %v, not the function's panic", x.name, got)
		}
	}
	// The source stays usable: a new subscriber hears it, and producers on
	// other goroutines do not wait for room nobody makes.
	later := rxtest.Record[int](nil, e.in)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for i := range 100 {
				e.in.OnNext(10 + i)
			}
		})
	}
	if !bounded(r, x.name+": producers after the panic", wg.Wait) {
		return
	}
	if n := len(later.Values()); n != 200 {
		r.Errorf("%s: the source delivered %d of 200 values after the panic", x.name, n)
	}
	later.Unsubscribe()
	finish(e)
}

// ruleReentrant: the observer, and a user function of the operator
// (Map's f, a SelectMany selector, a GroupBy key), feeding the source it is
// called from, past the mailbox's 32.
func ruleReentrant(r reporter, x entry) {
	r.Helper()
	for _, who := range whoCalls(x) {
		e := newEnv()
		p := newCprobe()
		var fed atomic.Bool
		feed := func(int) {
			if fed.CompareAndSwap(false, true) {
				for i := range 40 { // past the mailbox's 32
					e.in.OnNext(100 + i)
				}
			}
		}
		if who == "a user function" {
			e.setHook(feed)
		} else {
			p.onNext = feed
		}
		x.build(e).Subscribe(p)
		if !bounded(r, x.name+": "+who+" feeding its own source", func() {
			e.in.OnNext(1)
			e.clk.Advance(settle)
		}) {
			return
		}
		finish(e)
		if v := p.violations(); len(v) > 0 {
			r.Errorf("%s, %s feeding its own source: grammar broken: %v", x.name, who, v)
		}
	}
}

// whoCalls names what a rule acts from: the observer, and a user function
// of the operator where it has one.
func whoCalls(x entry) []string {
	if x.has(userFn) {
		return []string{"the observer", "a user function"}
	}
	return []string{"the observer"}
}

// transitBound is what the memory rule allows producers to have handed
// over while the consumer is blocked: the mailboxes' queues and budgets of
// a few stages, far below the values offered.
const transitBound = 400

func ruleMemory(r reporter, x entry) {
	r.Helper()
	e := newEnv()
	p := newCprobe()
	release := make(chan struct{})
	p.onNext = func(v int) {
		if v >= 1000 { // the producers' values; not what the operator starts with
			p.once.Do(func() { close(p.entered) })
			<-release
		}
	}
	sub := x.build(e).Subscribe(p)
	var accepted atomic.Int64
	var producers sync.WaitGroup
	for range 2 {
		producers.Go(func() {
			for i := range 5000 {
				e.in.OnNext(1000 + i)
				accepted.Add(1)
			}
		})
	}
	select {
	case <-p.entered:
	case <-time.After(hangBound(r)):
		r.Errorf("%s: the consumer was never reached", x.name)
		close(release)
		sub.Unsubscribe()
		producers.Wait()
		return
	}
	// Let the producers run on as far as they can: until they have handed
	// over more than the bound, or every goroutine but this one is parked
	// (they wait for room, and nothing can give them any: the operator
	// holds no more), or a generous bound for a hang passes. The wait
	// observes progress; it asserts nothing. It does not stop at a pause in
	// the count: a loaded machine can pause the producers of an operator
	// without a bound (the negative control) for any length of real time
	// (it was 20ms), and the rule would then not see them exceed it.
	for deadline := time.Now().Add(memoryBound); time.Now().Before(deadline) && accepted.Load() <= transitBound; {
		runtime.Gosched()
		if othersParked() && accepted.Load() <= transitBound {
			break
		}
	}
	if n := accepted.Load(); n > transitBound {
		r.Errorf("%s: producers handed over %d values while the consumer was blocked (bound %d)", x.name, n, transitBound)
	}
	close(release)
	sub.Unsubscribe()
	bounded(r, x.name+": producers after the consumer is released", producers.Wait)
	finish(e)
}

// memoryBound bounds the memory rule's wait for its producers to stop: a
// ceiling for a hang, never reached in a passing run (they stop at once or
// exceed the bound).
const memoryBound = 10 * time.Second

// othersParked reports whether every goroutine but the caller waits on
// something (a channel, a lock, a condition, the network or a system
// call) rather than being able to run: then no producer can make progress
// until the caller acts. A goroutine that is runnable, running or
// preempted, however long the machine has paused it, is not parked; nor is
// one the runtime holds for a moment (helping or waiting for the garbage
// collector, a stop of the world: an allocation that starts a collection
// waits in a plain "semacquire", which sync's locks and groups name
// otherwise), which goes on by itself.
func othersParked() bool {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 {
			continue // the caller's own, which the dump lists first
		}
		header, _, _ := strings.Cut(g, "\n")
		_, state, ok := strings.Cut(header, " [")
		if !ok {
			return false
		}
		state, _, _ = strings.Cut(state, "]")
		state, _, _ = strings.Cut(state, ",") // "select, 2 minutes", "chan receive, locked to thread"
		switch state {
		case "running", "runnable", "preempted", "sleep",
			"semacquire", "GC assist wait", "GC assist marking", "garbage collection",
			"stopping the world", "flushing proc caches", "GC weak to strong wait":
			return false
		}
	}
	return true
}

func ruleContext(r reporter, x entry) {
	r.Helper()
	for name, src := range map[string]rx.Observable[int]{
		"a silent subject": rx.NewSubject[int](),
		"a producer looping inside Subscribe": rx.Create(func(ctx context.Context, o rx.Observer[int]) {
			select {
			case <-ctx.Done():
			case <-x.release:
			}
		}),
	} {
		ctx, cancel := context.WithCancel(context.Background())
		var err error
		go func() {
			for range 100 {
				runtime.Gosched()
			}
			cancel()
		}()
		if bounded(r, x.name+" over "+name+" with a cancelled context", func() { err = x.consume(ctx, src) }) && err != context.Canceled {
			r.Errorf("%s over %s: returned %v, want context.Canceled", x.name, name, err)
		}
		cancel()
	}
}

func ruleNils(r reporter, x entry) {
	r.Helper()
	for i, call := range x.nils {
		p := recovered(call)
		msg, _ := p.(string)
		if want := "rx." + x.name + ": nil"; !strings.HasPrefix(msg, want) {
			r.Errorf("%s: nil argument %d: panicked with %v, want a message starting %q", x.name, i, p, want)
		}
	}
}

// TestEveryOperatorKeepsTheContractOnTheAdversarialSchedule runs every rule
// over every entry it applies to, then checks that the entry left no
// goroutine behind.
func TestEveryOperatorKeepsTheContractOnTheAdversarialSchedule(t *testing.T) {
	for _, x := range table() {
		t.Run(x.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			for _, rl := range rules() {
				if rl.applies(x) {
					rl.check(t, x)
				}
			}
			if err := goleak.Find(ignore); err != nil {
				t.Errorf("%s left goroutines behind: %v", x.name, err)
			}
			if x.has(input) {
				// Every Subscribe(nil) names the argument too.
				p := recovered(func() { x.build(newEnv()).Subscribe(nil) })
				if msg, _ := p.(string); !strings.Contains(msg, "nil observer") {
					t.Errorf("%s: Subscribe(nil) panicked with %v, want a message naming the observer", x.name, p)
				}
			}
		})
	}
}

// TestEveryExportedRxFunctionHasAConformanceEntry reads package rx's
// non-test sources and fails for an exported function missing from the
// table, so that the next operator cannot skip the schedule.
func TestEveryExportedRxFunctionHasAConformanceEntry(t *testing.T) {
	var exported []string
	for _, fd := range exportedFuncs(t) {
		exported = append(exported, fd.Name.Name)
	}
	listed := map[string]bool{}
	for _, x := range table() {
		if listed[x.name] {
			t.Errorf("%s is listed twice", x.name)
		}
		listed[x.name] = true
	}
	var missing []string
	for _, name := range exported {
		if !listed[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("exported rx functions without a conformance entry: %v", missing)
	}
	if len(exported) < 50 {
		t.Errorf("found only %d exported functions: is the test reading package rx?", len(exported))
	}
}

// exportedFuncs returns the declarations of the exported functions (not
// methods) in package rx's non-test sources.
func exportedFuncs(t *testing.T) []*ast.FuncDecl {
	t.Helper()
	var out []*ast.FuncDecl
	for _, file := range rxFiles(t) {
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.IsExported() {
				out = append(out, fd)
			}
		}
	}
	return out
}

// rxFiles parses package rx's non-test sources.
func rxFiles(t *testing.T) []*ast.File {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, file)
	}
	return out
}

// rawOp is an operator written outside package rx, as a user could: the
// negative controls below are such operators, each breaking one rule.
type rawOp func(o rx.Observer[int]) rx.Subscription

func (f rawOp) Subscribe(o rx.Observer[int]) rx.Subscription { return f(o) }

type noop struct{}

func (noop) Unsubscribe() {}

// unsubscribeFunc is a Subscription made of a function.
type unsubscribeFunc func()

func (f unsubscribeFunc) Unsubscribe() { f() }

// handOff runs f on a goroutine of its own for each value given to the
// function it returns, which waits until f has returned: an operator that
// calls out on another goroutine and waits, which a call re-entering from
// there cannot get past. It reports false when abort closed first.
func handOff(abort <-chan struct{}, f func(int)) func(int) bool {
	next, ack := make(chan int), make(chan struct{})
	go func() {
		for {
			select {
			case v := <-next:
				f(v)
				select {
				case ack <- struct{}{}:
				case <-abort:
					return
				}
			case <-abort:
				return
			}
		}
	}()
	return func(v int) bool {
		select {
		case next <- v:
		case <-abort:
			return false
		}
		select {
		case <-ack:
			return true
		case <-abort:
			return false
		}
	}
}

// TestTheConformanceRulesCatchBrokenOperators runs, for every rule, an
// operator broken in just that way through the rule: the rule must report
// it. (These are the negative controls of the table.)
func TestTheConformanceRulesCatchBrokenOperators(t *testing.T) {
	abort := make(chan struct{})
	defer close(abort)
	lock := func(mu chan struct{}) bool { // a lock a panic can leave held
		select {
		case mu <- struct{}{}:
			return true
		case <-abort:
			return false
		}
	}
	controls := []struct {
		rule string
		x    entry
		run  func(r reporter, x entry)
	}{
		{"grammar", entry{name: "EmitsAfterItsEnd", flags: input, build: func(e *env) rx.Observable[int] {
			return rawOp(func(o rx.Observer[int]) rx.Subscription {
				return e.in.Subscribe(rx.NewObserver(o.OnNext, o.OnError, func() { o.OnCompleted(); o.OnNext(-1) }))
			})
		}}, ruleGrammar},
		{"unsubscribe from another goroutine", entry{name: "IgnoresUnsubscribe", flags: input, build: func(e *env) rx.Observable[int] {
			return rawOp(func(o rx.Observer[int]) rx.Subscription {
				e.in.Subscribe(rx.NewObserver(o.OnNext, o.OnError, o.OnCompleted))
				return noop{}
			})
		}}, ruleUnsubscribeFromAnotherGoroutine},
		{"unsubscribe inside a user function", entry{name: "ForwardsAfterItsFunctionUnsubscribed", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rawOp(func(o rx.Observer[int]) rx.Subscription {
				return e.in.Subscribe(rx.NewObserver(func(v int) { e.fn(v); o.OnNext(v) }, o.OnError, o.OnCompleted))
			})
		}}, ruleUnsubscribeInside},
		{"timer at the same instant", entry{name: "DelaysWithoutChecking", flags: input | timed, build: func(e *env) rx.Observable[int] {
			return rawOp(func(o rx.Observer[int]) rx.Subscription {
				return e.in.Subscribe(rx.NewObserver(func(v int) {
					e.clk.Schedule(oneMilli, func() { o.OnNext(v) })
				}, nil, nil))
			})
		}}, ruleTimerSameInstant},
		{"panic", entry{name: "HoldsALockAcrossAPanic", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			mu := make(chan struct{}, 1)
			return rawOp(func(o rx.Observer[int]) rx.Subscription {
				return e.in.Subscribe(rx.NewObserver(func(v int) {
					if !lock(mu) {
						return
					}
					e.fn(v)
					o.OnNext(v)
					<-mu // not deferred: a panic leaves it held
				}, o.OnError, o.OnCompleted))
			})
		}}, rulePanic},
		{"released after a panic", entry{name: "ForgetsItsSourceWhenItsObserverPanics", flags: input, build: func(e *env) rx.Observable[int] {
			return rawOp(func(o rx.Observer[int]) rx.Subscription {
				var panicked atomic.Bool
				inner := e.in.Subscribe(rx.NewObserver(func(v int) {
					returned := false
					defer func() { panicked.CompareAndSwap(false, !returned) }()
					o.OnNext(v)
					returned = true
				}, o.OnError, o.OnCompleted))
				return unsubscribeFunc(func() {
					if !panicked.Load() {
						inner.Unsubscribe()
					}
				})
			})
		}}, ruleReleasedAfterPanic},
		{"unsubscribe inside the end", entry{name: "LocksAroundItsEnd", flags: input, build: func(e *env) rx.Observable[int] {
			return rawOp(func(o rx.Observer[int]) rx.Subscription {
				mu := make(chan struct{}, 1) // held across the end, taken by Unsubscribe
				end := func(f func()) {
					if lock(mu) {
						f()
						<-mu
					}
				}
				inner := e.in.Subscribe(rx.NewObserver(o.OnNext,
					func(err error) { end(func() { o.OnError(err) }) },
					func() { end(o.OnCompleted) }))
				return unsubscribeFunc(func() {
					if lock(mu) {
						inner.Unsubscribe()
						<-mu
					}
				})
			})
		}}, ruleUnsubscribeInsideTheEnd},
		{"goes on after a function panicked", entry{name: "StaysBusyAfterItsFunctionPanicked", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rawOp(func(o rx.Observer[int]) rx.Subscription {
				busy := false // as ConcatMap's active was: set around the function, not deferred
				return e.in.Subscribe(rx.NewObserver(func(v int) {
					if busy {
						return
					}
					busy = true
					e.fn(v)
					o.OnNext(v)
					busy = false
				}, o.OnError, func() {
					if !busy {
						o.OnCompleted()
					}
				}))
			})
		}}, ruleGoesOnAfterAFunctionPanicked},
		{"released after a panic at the end", entry{name: "ReleasesTheOtherInputAfterItsError", flags: input, build: func(e *env) rx.Observable[int] {
			return rawOp(func(o rx.Observer[int]) rx.Subscription {
				var subs [2]rx.Subscription
				var mu sync.Mutex
				for i, s := range []*rx.Subject[int]{e.in, e.in2} {
					sub := s.Subscribe(rx.NewObserver(o.OnNext, func(err error) {
						o.OnError(err)
						mu.Lock()
						other := subs[1-i]
						mu.Unlock()
						if other != nil {
							other.Unsubscribe() // not deferred: a panic above skips it
						}
					}, nil))
					mu.Lock()
					subs[i] = sub
					mu.Unlock()
				}
				return unsubscribeFunc(func() { subs[0].Unsubscribe(); subs[1].Unsubscribe() })
			})
		}}, ruleReleasedAfterAPanicAtTheEnd},
		{"re-entrancy", entry{name: "HandsOverAndWaits", flags: input, build: func(e *env) rx.Observable[int] {
			return rawOp(func(o rx.Observer[int]) rx.Subscription {
				deliver := handOff(abort, o.OnNext) // the observer is called elsewhere
				return e.in.Subscribe(rx.NewObserver(func(v int) { deliver(v) }, nil, nil))
			})
		}}, ruleReentrant},
		{"re-entrancy from a user function", entry{name: "CallsItsFunctionElsewhereAndWaits", flags: input | userFn, build: func(e *env) rx.Observable[int] {
			return rawOp(func(o rx.Observer[int]) rx.Subscription {
				call := handOff(abort, e.fn) // the function runs elsewhere
				return e.in.Subscribe(rx.NewObserver(func(v int) {
					if call(v) {
						o.OnNext(v)
					}
				}, nil, nil))
			})
		}}, ruleReentrant},
		{"memory", entry{name: "QueuesWithoutBound", flags: input, build: func(e *env) rx.Observable[int] {
			return rawOp(func(o rx.Observer[int]) rx.Subscription {
				var mu sync.Mutex
				var q []int
				wake := make(chan struct{}, 1)
				go func() {
					for {
						select {
						case <-wake:
						case <-abort:
							return
						}
						for {
							mu.Lock()
							if len(q) == 0 {
								mu.Unlock()
								break
							}
							v := q[0]
							q = q[1:]
							mu.Unlock()
							o.OnNext(v)
						}
					}
				}()
				return e.in.Subscribe(rx.NewObserver(func(v int) {
					mu.Lock()
					q = append(q, v)
					mu.Unlock()
					select {
					case wake <- struct{}{}:
					default:
					}
				}, nil, nil))
			})
		}}, ruleMemory},
		{"ctx", entry{name: "FirstIgnoringItsContext", flags: consumer, release: abort,
			consume: func(_ context.Context, src rx.Observable[int]) error {
				got := make(chan error, 1)
				sub := src.Subscribe(rx.NewObserver(func(int) { got <- nil }, func(err error) { got <- err }, func() { got <- rx.ErrEmpty }))
				defer sub.Unsubscribe()
				select {
				case err := <-got:
					return err
				case <-abort:
					return nil
				}
			}}, ruleContext},
		{"nil arguments", entry{name: "MapWithoutNilCheck", nils: []func(){func() {
			_ = rawOp(func(o rx.Observer[int]) rx.Subscription { return noop{} })
		}}}, ruleNils},
	}
	for _, c := range controls {
		t.Run(c.rule+"/"+c.x.name, func(t *testing.T) {
			var r collector
			c.run(&r, c.x)
			if !r.failed() {
				t.Errorf("the rule %q did not catch %s", c.rule, c.x.name)
			}
		})
	}
	t.Run("goroutines/LeavesAGoroutine", func(t *testing.T) {
		ignore := goleak.IgnoreCurrent()
		go func() { <-abort }()
		if goleak.Find(ignore) == nil {
			t.Error("the goroutine check did not catch a goroutine left running")
		}
	})
}
