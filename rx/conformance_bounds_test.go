package rx_test

import (
	"runtime"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meshrx/meshrx/rx"
)

// The bound table of issue 20: "no queue without a bound". Every exported
// function of package rx is classified by what bounds the values it holds
// in flight; TestEveryRxOperatorHoldsValuesWithinItsStatedBound fails for
// a function missing from the classification, and measures the operators
// whose producers wait at a named limit: a producer on another goroutine
// racing ahead of a blocked consumer must not get more than that limit
// held, and nothing may be lost or reordered. (The transit bound is the
// main table's memory rule; the limits that fail a stream have their own
// tests.)

// holdClass says what bounds the values an operator holds.
type holdClass int

const (
	// holdsNothing: no value is kept past its own delivery (a source, a
	// stateless stage, a consumer handing values on as they come).
	holdsNothing holdClass = iota
	// holdsTransit: the values in transit through a serialising stage (a
	// mailbox: 32 queued, producers beyond wait); the main table's
	// memory rule ("a blocked consumer bounds memory") checks it where
	// it applies (an input, no timer).
	holdsTransit
	// holdsConstant: a fixed number by meaning (the latest value, one per
	// source, an accumulator), plus transit where it serialises.
	holdsConstant
	// holdsCount: proportional to a count the caller passes (TakeLast(n)).
	holdsCount
	// holdsCollection: the result is the whole input, or every distinct
	// key of it, by meaning (ToMap, Collect, Distinct's seen set); its doc
	// comment says so.
	holdsCollection
	// holdsTime: what arrives within a duration the caller passes
	// (BufferTime's window, which is also its result): bound the source's
	// rate; its doc comment says so.
	holdsTime
	// holdsLimitFails: at most a named limit, beyond which the stream
	// fails with an *OverflowError.
	holdsLimitFails
	// holdsLimitWaits: at most a named limit, beyond which a producer on
	// another goroutine waits for room (and one that must not wait fails
	// the stream with an *OverflowError). Measured.
	holdsLimitWaits
)

type holdEntry struct {
	name  string
	class holdClass
	how   string // the bound, in words (as its doc comment says it)
	// limit and build are the measured entries' (every one whose
	// producers wait; each pushes some 65,000 values, so those that fail
	// are only classified here, their own tests (zip_test.go,
	// concatall_test.go, ...) checking their limits): the most values held
	// once the producer can go no further, and the operator over env.in
	// (its consumer blocks on the first value >= 1000).
	limit int
	build func(e *env) rx.Observable[int]
}

func holdTable() []holdEntry {
	none := func(names ...string) []holdEntry {
		var out []holdEntry
		for _, n := range names {
			out = append(out, holdEntry{name: n, class: holdsNothing})
		}
		return out
	}
	t := none("First", "NewObserver", "Return", "Of", "Range", "Empty", "Never", "Throw", "FromSeq",
		"FromChannel", "Defer", "Interval", "Timer", "Map", "Filter", "Do", "TakeWhile", "SkipWhile",
		"Take", "Skip", "DefaultIfEmpty", "IgnoreElements", "Materialize", "Dematerialize",
		"Timestamp", "TimeInterval", "ThrowIfEmpty", "OnErrorReturn", "Catch", "Finally", "Using",
		"Retry", "RetryBackoff", "Repeat", "DelaySubscription", "Timeout", "TimeoutStage",
		"Throttle", "Find", "Contains", "Every", "IsEmpty", "ElementAt", "StartWith", "Concat",
		"OnErrorResumeNext", "Race", "Switch", "SwitchMap", "ExhaustMap", "Share")
	transit := func(how string, names ...string) {
		for _, n := range names {
			t = append(t, holdEntry{name: n, class: holdsTransit, how: how})
		}
	}
	transit("its mailbox", "Create", "NewSubject", "Merge", "TakeUntil", "SkipUntil", "RetryWhen")
	transit("its mailbox; a window holds none", "Window", "WindowCount", "WindowTime")
	transit("its mailbox; it runs as many inners as are live (SelectManyLimit bounds them)",
		"SelectMany", "MergeAll")
	t = append(t,
		holdEntry{name: "All", class: holdsTransit, how: "64 handed over from other goroutines; what the loop body feeds back is its own work queue"},
		holdEntry{name: "NewBehaviorSubject", class: holdsConstant, how: "the current value"},
		holdEntry{name: "NewAsyncSubject", class: holdsConstant, how: "the last value"},
		holdEntry{name: "Scan", class: holdsConstant, how: "the accumulator"},
		holdEntry{name: "Reduce", class: holdsConstant, how: "the accumulator"},
		holdEntry{name: "Count", class: holdsConstant, how: "the count"},
		holdEntry{name: "Sum", class: holdsConstant, how: "the sum"},
		holdEntry{name: "Average", class: holdsConstant, how: "the sum and count"},
		holdEntry{name: "Min", class: holdsConstant, how: "the least so far"},
		holdEntry{name: "Max", class: holdsConstant, how: "the greatest so far"},
		holdEntry{name: "Single", class: holdsConstant, how: "one value"},
		holdEntry{name: "Last", class: holdsConstant, how: "one value"},
		holdEntry{name: "Pairwise", class: holdsConstant, how: "one value"},
		holdEntry{name: "DistinctUntilChanged", class: holdsConstant, how: "one value"},
		holdEntry{name: "Debounce", class: holdsConstant, how: "the pending value"},
		holdEntry{name: "Sample", class: holdsConstant, how: "the latest value"},
		holdEntry{name: "WithLatestFrom", class: holdsConstant, how: "other's latest value"},
		holdEntry{name: "CombineLatest2", class: holdsConstant, how: "one value per side"},
		holdEntry{name: "CombineLatest", class: holdsConstant, how: "one value per source"},
		holdEntry{name: "ForkJoin", class: holdsConstant, how: "one value per source"},
		holdEntry{name: "TakeLast", class: holdsCount, how: "n values"},
		holdEntry{name: "SkipLast", class: holdsCount, how: "n values"},
		holdEntry{name: "BufferCount", class: holdsCount, how: "n values"},
		holdEntry{name: "ShareReplay", class: holdsCount, how: "n values"},
		holdEntry{name: "NewReplaySubject", class: holdsCount, how: "size values; every value when size <= 0 (a collection)"},
		holdEntry{name: "ToChannel", class: holdsCount, how: "the channel's size, at most ToChannelLimit"},
		holdEntry{name: "Collect", class: holdsCollection, how: "every value: the result"},
		holdEntry{name: "ToMap", class: holdsCollection, how: "one entry per value: the result"},
		holdEntry{name: "Distinct", class: holdsCollection, how: "every distinct value seen"},
		holdEntry{name: "DistinctBy", class: holdsCollection, how: "every distinct key seen"},
		holdEntry{name: "Delay", class: holdsLimitWaits, how: "QueueLimit values waiting for their time", limit: rx.QueueLimit,
			build: func(e *env) rx.Observable[int] { return rx.Delay(e.in, oneMilli, e.clk) }},
		holdEntry{name: "BufferTime", class: holdsTime, how: "the values of the current window"},
		holdEntry{name: "GroupBy", class: holdsLimitFails, how: "GroupLimit groups; a group holds no value"},
		holdEntry{name: "Expand", class: holdsLimitFails, how: "QueueLimit values waiting for f; inners as many as are live"},
		holdEntry{name: "Zip2", class: holdsLimitFails, how: "ZipLimit values of the side ahead"},
		holdEntry{name: "Zip", class: holdsLimitFails, how: "ZipLimit values per source ahead"},
		holdEntry{name: "SequenceEqual", class: holdsLimitFails, how: "ZipLimit values of the side ahead"},
		holdEntry{name: "ConcatAll", class: holdsLimitWaits, how: "QueueLimit sources waiting for their turn", limit: rx.QueueLimit + 1,
			build: func(e *env) rx.Observable[int] { return rx.ConcatAll(rx.Map(e.in, firstOnGoroutine)) }},
		holdEntry{name: "SelectManyLimit", class: holdsLimitWaits, how: "QueueLimit values waiting for a slot", limit: rx.QueueLimit + 1,
			build: func(e *env) rx.Observable[int] { return rx.SelectManyLimit(e.in, firstOnGoroutine, 1) }},
		holdEntry{name: "ConcatMap", class: holdsLimitWaits, how: "QueueLimit values waiting for their inner", limit: rx.QueueLimit + 1,
			build: func(e *env) rx.Observable[int] { return rx.ConcatMap(e.in, firstOnGoroutine) }},
	)
	return t
}

// Negative controls, run by hand: with Pairwise's entry removed the test
// failed with "exported rx functions without a bound classification:
// [Pairwise]"; with ConcatMap's queue appended to without a bound (as
// before issue 20's fix) it failed with "ConcatMap: the producer handed
// over 65637 values while the consumer was blocked (bound 65537)"; with
// Delay's wait removed, with "Delay: the producer handed over 65636 values
// while the consumer was blocked (bound 65536)"; with the flattener's wait
// removed (mayWait always false), ConcatAll, SelectManyLimit and ConcatMap
// each failed with "the producer handed over 65637 values ... (bound 65537)"
// and "more than 65536 values waiting for a free slot", in 12 runs of 12
// (before othersParked counted a goroutine held by the garbage collector as
// running, the measure was sometimes taken early and such a run passed).
func TestEveryRxOperatorHoldsValuesWithinItsStatedBound(t *testing.T) {
	listed := map[string]bool{}
	for _, x := range holdTable() {
		if listed[x.name] {
			t.Errorf("%s is classified twice", x.name)
		}
		listed[x.name] = true
		if (x.class == holdsLimitWaits) != (x.build != nil) {
			t.Errorf("%s: an operator whose producers wait for room is measured, and only such an operator", x.name)
		}
	}
	exported := map[string]bool{}
	var missing []string
	for _, fd := range exportedFuncs(t) {
		exported[fd.Name.Name] = true
		if !listed[fd.Name.Name] {
			missing = append(missing, fd.Name.Name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("exported rx functions without a bound classification: %v", missing)
	}
	for name := range listed {
		if !exported[name] {
			t.Errorf("%s is classified but is no exported function of rx", name)
		}
	}
	for _, x := range holdTable() {
		if x.build == nil {
			continue
		}
		t.Run(x.name, func(t *testing.T) {
			checkHeldWithin(t, x)
		})
	}
}

// checkHeldWithin has a producer on another goroutine push values into the
// entry's operator while its consumer is blocked, until it can go no further
// (it waits for room), and checks that the operator has then accepted at
// most x.limit values, and delivers every value in order once the consumer
// (and the clock) goes on.
func checkHeldWithin(t *testing.T, x holdEntry) {
	e := newEnv()
	rec := newSeqRecorder()
	sub := x.build(e).Subscribe(rec)
	defer sub.Unsubscribe()
	total := x.limit + 100
	var accepted atomic.Int64
	producer := make(chan struct{})
	go func() {
		defer close(producer)
		for i := range total {
			e.in.OnNext(1000 + i)
			accepted.Add(1)
		}
		e.in.OnCompleted()
	}()
	waitParkedOrPast(&accepted, int64(x.limit))
	n := accepted.Load()
	close(rec.release)
	// The consumer goes on, and so does the clock of a time-based entry.
	for deadline := time.Now().Add(hangBound(t)); ; {
		select {
		case <-producer:
		default:
			if time.Now().After(deadline) {
				t.Fatalf("%s: the producer is still blocked once the consumer goes on", x.name)
			}
			e.clk.Advance(oneMilli)
			runtime.Gosched()
			continue
		}
		break
	}
	e.in2.OnCompleted()
	e.clk.Advance(settle)
	var err error
	select {
	case <-rec.ended:
		err = rec.err
	case <-time.After(hangBound(t)):
		t.Fatalf("%s: the stream did not end", x.name)
	}
	if n > int64(x.limit) {
		t.Errorf("%s: the producer handed over %d values while the consumer was blocked (bound %d)", x.name, n, x.limit)
	}
	if err != nil {
		t.Fatalf("%s failed: %v", x.name, err)
	}
	got := rec.values()
	if len(got) != total {
		t.Fatalf("%s delivered %d values of %d", x.name, len(got), total)
	}
	for i, v := range got {
		if v != 1000+i {
			t.Fatalf("%s: value %d is %d, want %d: the order was not kept", x.name, i, v, 1000+i)
		}
	}
}
