package rx_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meshrx/meshrx/rx"
)

// compose (fuse.go) cuts a fused chain into runs and makes one closure per
// run: up to four Maps and Filters laid out on the pattern Map, Filter, Map,
// Filter (mfRun), and stages of the other kinds in the order Skip,
// SkipWhile, TakeWhile, Do, Map, Scan, Filter, DistinctUntilChanged
// (stRun), each with a loop form that Range and Of run and a form that is
// FromSeq's yield itself. The tests below hold every such run to the
// fusion rule (fusion_test.go): the same log fused and with unfused between
// every two stages, over every synchronous source and scenario.
//
// Negative controls, run by hand on fuse.go:
//   - without the scope check after r.f2 in mfRun's step (FromSeq's yield
//     for the first pair of [Map Map Map]; Range and Of run that pair's
//     headLoop instead): "[Map Map Map] over FromSeq, unsub@fn2: fused
//     [fn 0 fn 1 unsubscribe completed fn 2], unfused [fn 0 fn 1
//     unsubscribe completed]";
//   - without the scope check after r.scan in stRun's step: "[Scan Filter]
//     over FromSeq, unsub@fn1: fused [fn 0 unsubscribe completed fn 0],
//     unfused [fn 0 unsubscribe completed]";
//   - for FromSeq's yield, see
//     TestFromSeqComputesNoValuePastAnUnsubscriptionInADroppedValueOfEveryRunKind.

// stOrder is stRun's order of kinds, by conformance entry name.
var stOrder = []string{"Skip", "SkipWhile", "TakeWhile", "Do", "Map", "Scan", "Filter", "DistinctUntilChanged"}

// mfChains returns every chain of one to five Maps and Filters.
func mfChains() [][]string {
	var out [][]string
	for n := 1; n <= 5; n++ {
		for bits := range 1 << n {
			chain := make([]string, n)
			for i := range chain {
				chain[i] = "Map"
				if bits&(1<<i) != 0 {
					chain[i] = "Filter"
				}
			}
			out = append(out, chain)
		}
	}
	return out
}

// stChains returns every chain of two or more of stOrder's kinds in its
// order.
func stChains() [][]string {
	var out [][]string
	for bits := range 1 << len(stOrder) {
		var chain []string
		for i, name := range stOrder {
			if bits&(1<<i) != 0 {
				chain = append(chain, name)
			}
		}
		if len(chain) >= 2 {
			out = append(out, chain)
		}
	}
	return out
}

func fusedRuns(chain []string) []string {
	e := newEnv()
	return rx.FusedRuns(func(src rx.Observable[int]) rx.Observable[int] { return buildChain(e, src, chain, false) })
}

func TestComposeMakesOneRunOfMapsAndFiltersOnItsPatternAndOfTheOtherKindsInTheirOrder(t *testing.T) {
	want := map[string][]string{
		"Map Filter":                {"pair 2"},
		"Filter Map":                {"pair 2"},
		"Map Map":                   {"pair 2"},
		"Filter Filter":             {"mf 2"},
		"Map Map Filter":            {"mf 3"},
		"Filter Map Filter":         {"mf 3"},
		"Map Filter Map Filter":     {"mf 4"},
		"Map Map Map":               {"pair 2", "pair 1"},
		"Map Filter Map Filter Map": {"mf 4", "pair 1"},
		"Skip TakeWhile Scan DistinctUntilChanged": {"st 4"},
		strings.Join(stOrder, " "):                 {"st 8"},
		"Map Scan":                                 {"st 2"},
		"Scan Map":                                 {"one 1", "pair 1"},
		"Take Map":                                 {"one 1", "pair 1"},
		"Skip Map Filter Map Filter":               {"st 3", "pair 2"},
	}
	for chain, runs := range want {
		if got := fusedRuns(strings.Fields(chain)); !slices.Equal(got, runs) {
			t.Errorf("%s: runs %v, want %v", chain, got, runs)
		}
	}
	// Every chain below is cut into runs that hold all its stages, and
	// every stRun chain is one run.
	for _, chain := range append(mfChains(), stChains()...) {
		runs := fusedRuns(chain)
		n := 0
		for _, r := range runs {
			k, _ := strconv.Atoi(strings.Fields(r)[1])
			n += k
		}
		if n != len(chain) {
			t.Errorf("%v: runs %v hold %d stages, want %d", chain, runs, n, len(chain))
		}
		if chain[0] != "Map" && chain[0] != "Filter" || slices.Contains(chain, "Skip") {
			if len(runs) != 1 || !strings.HasPrefix(runs[0], "st ") {
				t.Errorf("%v: runs %v, want one stRun", chain, runs)
			}
		}
	}
}

func TestEveryRunOfMapsAndFiltersBehavesFusedAsItsStagesDoUnfused(t *testing.T) {
	compareChains(t, mfChains(), runChain)
}

func TestEveryRunOfTheOtherKindsBehavesFusedAsItsStagesDoUnfused(t *testing.T) {
	compareChains(t, stChains(), runChain)
}

// TestFromSeqComputesNoValuePastAnUnsubscriptionInADroppedValueOfEveryRunKind:
// FromSeq's yield is the first run's own closure (mfRun or stRun with the
// source's scope); a Filter that unsubscribes while dropping its third value
// must stop seq there, for every kind of first run, and so must a SkipWhile
// leading an stRun while skipping its third. Negative controls, run by hand:
// with the Filter's drop in mfRun.step (or stRun.step) returning true
// instead of checking the source's scope, seq computes a fourth value
// (produced is 4); with SkipWhile's skip in stRun.step (`return src == nil
// || !src.done.Load()` after r.skipW) returning true, "st 2 SkipWhile→Map:
// seq computed 4 values, want 3".
func TestFromSeqComputesNoValuePastAnUnsubscriptionInADroppedValueOfEveryRunKind(t *testing.T) {
	chains := []struct {
		name  string // the first run, and what drops
		chain func(src rx.Observable[int], keep func(int) bool) rx.Observable[int]
	}{
		{"pair 1 Filter", func(src rx.Observable[int], keep func(int) bool) rx.Observable[int] { return rx.Filter(src, keep) }},
		{"mf 2 Filter→Filter", func(src rx.Observable[int], keep func(int) bool) rx.Observable[int] {
			return rx.Filter(rx.Filter(src, func(int) bool { return true }), keep)
		}},
		{"st 2 Skip→Filter", func(src rx.Observable[int], keep func(int) bool) rx.Observable[int] {
			return rx.Filter(rx.Skip(src, 0), keep)
		}},
		{"st 2 SkipWhile→Map", func(src rx.Observable[int], keep func(int) bool) rx.Observable[int] {
			// keep never keeps: SkipWhile skips every value.
			return rx.Map(rx.SkipWhile(src, func(v int) bool { return !keep(v) }), func(v int) int { return v + 1 })
		}},
	}
	for _, c := range chains {
		name, chain := c.name, c.chain
		produced := 0
		seq := func(yield func(int) bool) {
			for i := range 10 {
				produced++
				if !yield(i) {
					return
				}
			}
		}
		stop := rx.NewSubject[int]()
		calls := 0
		keep := func(int) bool {
			calls++
			if calls == 3 {
				stop.OnNext(0) // unsubscribes the chain, on this goroutine
			}
			return false
		}
		got := rx.FusedRuns(func(src rx.Observable[int]) rx.Observable[int] { return chain(src, keep) })
		if f := strings.Fields(name); len(got) != 1 || got[0] != f[0]+" "+f[1] {
			t.Fatalf("%s: runs %v", name, got)
		}
		rx.TakeUntil(chain(rx.FromSeq(seq), keep), stop).Subscribe(rx.NewObserver[int](nil, nil, nil))
		if produced != 3 {
			t.Errorf("%s: seq computed %d values, want 3: a value past the unsubscription", name, produced)
		}
	}
}

// TestSkipAndSkipWhileRunAheadOfAnStRunsLoopAsTheyDoUnfusedAcrossRangesChunks:
// the loop forms of an stRun (stRun.loop, stLoopEq) run Skip and SkipWhile
// ahead of their loop (lead), per call: Range calls them once per chunk of
// 64, so a Skip or SkipWhile may end in the first chunk, at its last value,
// at the first of the next, in a later one, or never. Every such end, with
// and without DistinctUntilChanged at the end of the run (the two loop
// forms), and with SkipWhile's function unsubscribing at its k-th call,
// must give the log the stages give unfused. Negative controls, run by
// hand on fuse.go: lead returning i+1 for the value SkipWhile passes (that
// value skipped): "Skip(0) SkipWhile(<0) TakeWhile Scan distinct=false over
// Range: fused [skipWhile 0 next 1 ...], unfused [skipWhile 0 next 0 next 1
// ...]"; lead counting Skip down on a copy of its count (each call starts
// it again): every Skip(1) to Skip(130) row over Range fails (Of, one
// call, and Skip(250), past the end, pass).
func TestSkipAndSkipWhileRunAheadOfAnStRunsLoopAsTheyDoUnfusedAcrossRangesChunks(t *testing.T) {
	const n = 200
	vals := make([]int, n)
	for i := range vals {
		vals[i] = i - i/3 // repeats, for DistinctUntilChanged
	}
	sources := map[string]func() rx.Observable[int]{
		"Range": func() rx.Observable[int] { return rx.Range(0, n) },
		"Of":    func() rx.Observable[int] { return rx.Of(vals...) },
	}
	ends := []int{0, 1, 63, 64, 65, 130, 250}
	run := func(src rx.Observable[int], skip, while int, distinct, split bool, unsubAt int) []string {
		var log []string
		stop := rx.NewSubject[int]()
		hop := func(o rx.Observable[int]) rx.Observable[int] {
			if split {
				return unfused{o}
			}
			return o
		}
		calls := 0
		o := hop(rx.Skip(src, skip))
		o = hop(rx.SkipWhile(o, func(v int) bool {
			calls++
			log = append(log, "skipWhile "+strconv.Itoa(v))
			if calls == unsubAt {
				log = append(log, "unsubscribe")
				stop.OnNext(0)
			}
			return v < while
		}))
		o = hop(rx.TakeWhile(o, func(v int) bool { return v < n-5 }))
		o = hop(rx.Scan(o, 0, func(a, v int) int { return a + v%7 }))
		if distinct {
			o = hop(rx.DistinctUntilChanged(o))
		}
		rx.TakeUntil(o, stop).Subscribe(rx.NewObserver(
			func(v int) { log = append(log, "next "+strconv.Itoa(v)) },
			func(error) { log = append(log, "error") },
			func() { log = append(log, "completed") }))
		return log
	}
	for name, src := range sources {
		for _, skip := range ends {
			for _, while := range ends {
				for _, distinct := range []bool{false, true} {
					for _, unsubAt := range []int{0, 1, 2, 64, 66} {
						fused := run(src(), skip, while, distinct, false, unsubAt)
						split := run(src(), skip, while, distinct, true, unsubAt)
						if !slices.Equal(fused, split) {
							t.Errorf("Skip(%d) SkipWhile(<%d) TakeWhile Scan distinct=%v over %s, unsubscribing at call %d:\n fused:   %v\n unfused: %v",
								skip, while, distinct, name, unsubAt, fused, split)
						}
					}
				}
			}
		}
	}
	// The chains above are one stRun each, so the loop forms ran them.
	for _, distinct := range []bool{false, true} {
		runs := rx.FusedRuns(func(src rx.Observable[int]) rx.Observable[int] {
			o := rx.Scan(rx.TakeWhile(rx.SkipWhile(rx.Skip(src, 1), func(int) bool { return false }), func(int) bool { return true }), 0, func(a, v int) int { return a + v })
			if distinct {
				o = rx.DistinctUntilChanged(o)
			}
			return o
		})
		want := "st 4"
		if distinct {
			want = "st 5"
		}
		if !slices.Equal(runs, []string{want}) {
			t.Errorf("distinct=%v: runs %v, want [%s]", distinct, runs, want)
		}
	}
}
