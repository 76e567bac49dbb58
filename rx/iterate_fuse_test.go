package rx_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The tests of `range rx.All` over a synchronous source, where All's
// observer is the last step of the fused chain (fuse_all.go).

// hiddenSrc hides src behind an observable of another package: rx guards
// it, so All's observer is reached through OnNext, never fused.
type hiddenSrc struct{ src rx.Observable[int] }

func (h hiddenSrc) Subscribe(o rx.Observer[int]) rx.Subscription { return h.src.Subscribe(o) }

// allChain is a chain of stages over a source; its user functions log
// their calls.
type allChain struct {
	name  string
	build func(log *[]string, src rx.Observable[int]) rx.Observable[int]
	// sameType: every stage keeps the type, so All's step fuses with it
	// (fuseSync does not look through a Map that changes the type).
	sameType bool
}

func allChains() []allChain {
	fn := func(log *[]string, what string, v int) { *log = append(*log, fmt.Sprint(what, " ", v)) }
	return []allChain{
		{"none", func(_ *[]string, src rx.Observable[int]) rx.Observable[int] { return src }, true},
		{"Map", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			return rx.Map(src, func(v int) int { fn(log, "map", v); return v + 1 })
		}, true},
		{"Map-Filter", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			return rx.Filter(rx.Map(src, func(v int) int { fn(log, "map", v); return v * 2 }),
				func(v int) bool { fn(log, "filter", v); return v%3 != 0 })
		}, true},
		{"Filter-Map", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			return rx.Map(rx.Filter(src, func(v int) bool { fn(log, "filter", v); return v%2 == 0 }),
				func(v int) int { fn(log, "map", v); return v + 100 })
		}, true},
		{"Map-Filter-Map-Filter", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			s := rx.Filter(rx.Map(src, func(v int) int { fn(log, "map", v); return v + 3 }),
				func(v int) bool { fn(log, "filter", v); return v%4 != 0 })
			return rx.Filter(rx.Map(s, func(v int) int { fn(log, "map2", v); return v * 3 }),
				func(v int) bool { fn(log, "filter2", v); return v%5 != 0 })
		}, true},
		{"Take", func(_ *[]string, src rx.Observable[int]) rx.Observable[int] { return rx.Take(src, 3) }, true},
		{"Do-Map", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			return rx.Map(rx.Do(src, func(v int) { fn(log, "do", v) }), func(v int) int { fn(log, "map", v); return v - 1 })
		}, true},
		{"Skip-TakeWhile-Scan-Distinct", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			s := rx.TakeWhile(rx.Skip(src, 1), func(v int) bool { fn(log, "takewhile", v); return v < 9 })
			s = rx.Scan(s, 0, func(a, v int) int { fn(log, "scan", v); return a + v%2 })
			return rx.DistinctUntilChanged(s)
		}, true},
		{"via string", func(log *[]string, src rx.Observable[int]) rx.Observable[int] {
			s := rx.Map(src, func(v int) string { fn(log, "itoa", v); return strconv.Itoa(v) })
			return rx.Map(s, func(v string) int { n, _ := strconv.Atoi(v); return n })
		}, false},
	}
}

// allSources are the synchronous sources that hand their loop to a chain.
func allSources() map[string]func() rx.Observable[int] {
	vals := []int{0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8}
	return map[string]func() rx.Observable[int]{
		"Range":   func() rx.Observable[int] { return rx.Range(0, len(vals)) },
		"Of":      func() rx.Observable[int] { return rx.Of(vals...) },
		"FromSeq": func() rx.Observable[int] { return rx.FromSeq(slices.Values(vals)) },
		"Return":  func() rx.Observable[int] { return rx.Return(7) },
		"Empty":   func() rx.Observable[int] { return rx.Empty[int]() },
		"Defer": func() rx.Observable[int] {
			return rx.Defer(func() rx.Observable[int] { return rx.Range(0, len(vals)) })
		},
	}
}

// rangeLog ranges over src with All and logs every value, error and panic
// in order with the user functions' calls; the body ends the loop at its
// k-th value as how says ("" runs to the end). ctx can end unless lasting.
func rangeLog(src func(log *[]string) rx.Observable[int], how string, k int, lasting bool) []string {
	var log []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := ctx
	if lasting {
		run = context.Background()
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				log = append(log, fmt.Sprint("panic ", p))
			}
		}()
		i := 0
		for v, err := range rx.All(run, src(&log)) {
			if err != nil {
				log = append(log, "error "+err.Error())
				continue
			}
			log = append(log, fmt.Sprint("value ", v))
			if i++; i == k {
				switch how {
				case "break":
					log = append(log, "break")
					return
				case "panic":
					panic("boom")
				case "cancel":
					cancel()
				}
			}
		}
		log = append(log, "loop ended")
	}()
	return log
}

// Ranging over a synchronous source behaves the same whether All's
// observer is the last step of the fused chain or is reached through
// OnNext (the chain hidden behind a foreign observable): every source that
// fuses, every chain of stages (All fuses with those that keep the type),
// a ctx that can end and one that cannot, a break, a panic and a
// cancellation of ctx in the body at its first and third value. The logs
// hold the user functions' calls too: a source that went on past a break
// would show. Negative control, run by hand on fuse_all.go: with the
// lasting step (no ctx check) used for a ctx that can end, the cancel rows
// fail ("none over FromSeq, cancel@1": values 1…8 yielded after the
// cancel, fused only).
func TestRangingOverASynchronousSourceBehavesAlikeWithAllFusedAndReachedThroughOnNext(t *testing.T) {
	defer goleak.VerifyNone(t)
	for name, source := range allSources() {
		for _, c := range allChains() {
			for _, sc := range []struct {
				how string
				k   int
			}{{"", 0}, {"break", 1}, {"break", 3}, {"panic", 1}, {"panic", 3}, {"cancel", 1}, {"cancel", 3}} {
				for _, lasting := range []bool{true, false} {
					if sc.how == "cancel" && lasting {
						continue
					}
					label := fmt.Sprintf("%s over %s, %s@%d, lasting ctx %v", c.name, name, sc.how, sc.k, lasting)
					fused := rangeLog(func(log *[]string) rx.Observable[int] { return c.build(log, source()) }, sc.how, sc.k, lasting)
					reached := rangeLog(func(log *[]string) rx.Observable[int] { return hiddenSrc{c.build(log, source())} }, sc.how, sc.k, lasting)
					require.Equal(t, reached, fused, label)
				}
			}
		}
	}
}

// All's step is the last of the fused chain of a source that loops inside
// Subscribe on the ranging goroutine (what Of and Range ask for
// with fuseSync): one stage more than the chain alone fuses, for every
// chain of stages that keep the type; behind a foreign observable the
// chain fuses its own stages only. Negative controls, run by hand on
// fuse_all.go: with syncOut doing what fuserOut does, or syncStep returning
// nil, every count is the chain's own and the first assertion fails
// ("none": 0, not 1). Which sources ask fuseSync (Of, Range) shows
// in no behaviour (the table above holds either way); B15 measures it.
func TestAllsStepIsTheLastStageOfTheFusedChainOfASynchronousSource(t *testing.T) {
	var log []string
	for _, c := range allChains() {
		build := func(src rx.Observable[int]) rx.Observable[int] { return c.build(&log, src) }
		chain := max(rx.FusedStages(build), 0)
		if c.sameType {
			assert.Equal(t, chain+1, rx.AllFusedStages(build), c.name)
		} else {
			assert.Equal(t, chain, rx.AllFusedStages(build), c.name+": not looked through")
		}
		hidden := func(src rx.Observable[int]) rx.Observable[int] { return hiddenSrc{build(src)} }
		assert.Equal(t, chain, rx.AllFusedStages(hidden), c.name+" hidden: the chain's own stages only")
	}
}

// A chain that is one run of Maps and Filters (none, or up to four laid
// out on mfRun's pattern) between a synchronous source and All is run by
// All's own loop, which calls the body itself; every other chain (a stage
// of another kind, a type change, a chain behind a foreign observable, five
// Maps) keeps All's step as its last stage. The behaviour is the same
// either way (the table above runs every one of these chains). Negative
// control, run: with fuseSync's allLoop branch removed every "none, Map,
// Map-Filter, ..." row fails (false, want true).
func TestAChainOfMapsAndFiltersOverASynchronousSourceHasAllsBodyCalledFromItsOwnLoop(t *testing.T) {
	var log []string
	direct := map[string]bool{"none": true, "Map": true, "Map-Filter": true, "Filter-Map": true, "Map-Filter-Map-Filter": true}
	for _, c := range allChains() {
		build := func(src rx.Observable[int]) rx.Observable[int] { return c.build(&log, src) }
		assert.Equal(t, direct[c.name], rx.AllLoopsTheBody(build), c.name)
		hidden := func(src rx.Observable[int]) rx.Observable[int] { return hiddenSrc{build(src)} }
		assert.False(t, rx.AllLoopsTheBody(hidden), c.name+" hidden")
	}
	inc := func(v int) int { return v + 1 }
	five := func(src rx.Observable[int]) rx.Observable[int] {
		return rx.Map(rx.Map(rx.Map(rx.Map(rx.Map(src, inc), inc), inc), inc), inc)
	}
	assert.False(t, rx.AllLoopsTheBody(five), "five Maps: more than one run")
}

// A synchronous source subscribed while the loop body runs (the body
// advances the virtual clock: Timeout fails, Catch subscribes Range inside
// the body, on the ranging goroutine) does not run the body from inside it:
// its values are queued and yielded once the body returns, in order.
// Negative control: without !a.inBody in syncReady, Range's values ran the
// body from inside itself, the range-over-func runtime panicked and the loop
// yielded [0] only.
func TestASynchronousSourceSubscribedWhileTheBodyRunsIsYieldedAfterTheBody(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := rxtest.NewClock()
	// sent is closed once the producer's OnNext has returned: until then
	// Timeout counts the value as being forwarded, and a firing then
	// restarts the bound instead of failing (the test advanced the clock
	// before that and hung, 1 run in a few hundred under load).
	sent := make(chan struct{})
	first := rx.Create(func(ctx context.Context, o rx.Observer[int]) {
		go func() { // handed over: the body runs in All's loop
			o.OnNext(0)
			close(sent)
		}()
	})
	src := rx.Catch(rx.Timeout(first, time.Second, clk), func(error) rx.Observable[int] {
		return rx.Map(rx.Range(10, 3), func(v int) int { return v })
	})
	var vs []int
	depth, deepest := 0, 0
	within(t, "the loop", func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("the loop panicked: %v", p)
			}
		}()
		for v, err := range rx.All(context.Background(), src) {
			if err != nil {
				t.Error(err)
				return
			}
			depth++
			deepest = max(deepest, depth)
			vs = append(vs, v)
			if v == 0 {
				select {
				case <-sent:
				case <-time.After(deadlockBound):
					t.Error("the producer's OnNext never returned")
				}
				clk.Advance(2 * time.Second)
			}
			depth--
		}
	})
	assert.Equal(t, []int{0, 10, 11, 12}, vs)
	assert.Equal(t, 1, deepest, "the body ran inside itself")
}

// A synchronous source subscribed on the ranging goroutine behind values
// another goroutine handed over (Catch subscribes Range when the producer,
// having waited for its goroutine, fails) yields after them. Negative
// control: without the pending check in syncReady the loop yielded
// [10 0 1 ... 9 11 12 13 14] (Range's first value ran the body at once).
func TestASynchronousSourceSubscribedBehindValuesHandedOverYieldsAfterThem(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := rx.Catch(rx.Create(func(_ context.Context, o rx.Observer[int]) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 10 {
				o.OnNext(i)
			}
		}()
		select {
		case <-done:
		case <-time.After(deadlockBound):
			t.Errorf("the producer goroutine did not finish within %s", deadlockBound)
		}
		o.OnError(rxtest.ErrTest)
	}), func(error) rx.Observable[int] { return rx.Range(10, 5) })
	vs, errs := drain(rx.All(context.Background(), src))
	assert.Empty(t, errs)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, vs)
}

// A synchronous source subscribed on another goroutine (Catch subscribes
// Range from the goroutine on which the producer failed) hands its values
// over: the body runs on the ranging goroutine only. Negative control:
// without the goroutine checks in syncReady and syncStep the body ran on the
// producer's goroutine for all 1000 values.
func TestASynchronousSourceSubscribedOnAnotherGoroutineHandsItsValuesToTheRangingGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := rx.Catch(rx.Create(func(_ context.Context, o rx.Observer[int]) {
		go o.OnError(rxtest.ErrTest)
	}), func(error) rx.Observable[int] { return rx.Range(0, 1000) })
	ranging := goroutineID()
	n, elsewhere := 0, 0
	within(t, "the loop", func() {
		ranging = goroutineID()
		for _, err := range rx.All(context.Background(), src) {
			if err != nil {
				t.Error(err)
				return
			}
			n++
			if goroutineID() != ranging {
				elsewhere++
			}
		}
	})
	assert.Equal(t, 1000, n)
	assert.Zero(t, elsewhere, "values whose body ran on another goroutine than the ranging one")
}

// A seq whose yield the loop body calls again (a push source) has that value
// queued and yielded after the body, fused or not: the body never runs inside
// itself. Negative control (run): with FromSeq asking fuseSync (All's step
// the last of its chain) and syncStep's inBody guard removed, the
// range-over-func runtime panicked ("continued iteration after loop body
// panic") after yielding [0]; either one alone keeps the test passing.
func TestAValueASeqYieldsFromInsideAllsBodyIsYieldedAfterTheBody(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, fused := range []bool{true, false} {
		var push func(int) bool
		seq := func(yield func(int) bool) {
			push = yield
			for i := 0; i < 3; i++ {
				if !yield(i * 10) {
					return
				}
			}
		}
		src := rx.FromSeq(seq)
		if !fused {
			src = rx.Map(rx.Map(src, strconv.Itoa), func(s string) int { n, _ := strconv.Atoi(s); return n })
		}
		var got []int
		within(t, "the loop", func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("fused=%v: the loop panicked: %v (got %v)", fused, p, got)
				}
			}()
			for v, err := range rx.All(context.Background(), src) {
				require.NoError(t, err)
				got = append(got, v)
				if v%10 == 0 {
					push(v + 1)
				}
			}
		})
		assert.Equal(t, []int{0, 1, 10, 11, 20, 21}, got, "fused=%v", fused)
	}
}
