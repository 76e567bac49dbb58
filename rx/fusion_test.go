package rx_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Fusion (fuse.go) runs the stateless stages inside a synchronous source's
// loop. It must change no behaviour, so the conformance table runs every
// such stage both ways: the rule "fused and unfused alike" (rules()) applies
// to every entry listed in fusable() and
//
//   - runs the table's other rules over the stage reached through OnNext,
//     behind unfused (a foreign observable, which rx guards and cannot see
//     through), while the entry itself runs them fused (a Subject hands its
//     values to the fused chain below it);
//   - runs chains of that stage with every other (alone, in pairs both
//     ways, and in longer chains) over every synchronous source (Range, Of,
//     FromSeq, Return, Empty, Defer of one, a Subject fed after
//     subscription), fused and with unfused between every two stages, on
//     the same scenarios (plain, unsubscribing inside the k-th user function
//     call or the k-th value, panicking there), and requires the two logs
//     (every user function call, value, ending, panic) to be identical, and
//     nothing but the ending after an unsubscription.
//
// TestEveryStageThatFusesIsInTheFusionTable fails for an entry of table()
// that fuses with its source and is missing from fusable().
//
// Negative controls, run by hand on fuse.go (each fails the rule for the
// stages named, with the fused and unfused logs side by side):
//   - without the scope check after Map's function in single's opMap
//     closure (or in mapFilter's, for Maps followed by a Filter, or in
//     headLoop's loops, which Range and Of run): Map, Filter,
//     Scan, Do, TakeWhile ("[Map Do] over Range, unsub@fn1: fused [fn 0
//     unsubscribe completed fn 1], unfused [fn 0 unsubscribe completed]"),
//     and the table's own unsubscribe-inside rule for Map and Do;
//   - without the check of the source's scope before each value in
//     fused.run (Of) or Range's fused loop:
//     Map, Filter, ... ("[Map] over Range, unsub@value1: fused [... completed
//     fn 1]");
//   - without SkipWhile's check after its function: "[SkipWhile Map] over
//     Range, unsub@fn3: fused [... completed fn 2]".

// fstage builds one stage over src; its user functions call e.fn.
type fstage func(e *env, src rx.Observable[int]) rx.Observable[int]

// fusable lists the stages that fuse, by their conformance entry's name.
// Their functions keep the values the table's rules push (the memory rule
// tells the producers' values by their size).
func fusable() map[string]fstage {
	return map[string]fstage{
		"Map": func(e *env, src rx.Observable[int]) rx.Observable[int] {
			return rx.Map(src, func(v int) int { e.fn(v); return v + 1 })
		},
		"Filter": func(e *env, src rx.Observable[int]) rx.Observable[int] {
			return rx.Filter(src, func(v int) bool { e.fn(v); return v%3 != 2 })
		},
		"Scan": func(e *env, src rx.Observable[int]) rx.Observable[int] {
			return rx.Scan(src, 0, func(a, v int) int { e.fn(v); return a + v })
		},
		"Do": func(e *env, src rx.Observable[int]) rx.Observable[int] { return rx.Do(src, e.fn) },
		"TakeWhile": func(e *env, src rx.Observable[int]) rx.Observable[int] {
			return rx.TakeWhile(src, func(v int) bool { e.fn(v); return v != 9 })
		},
		"SkipWhile": func(e *env, src rx.Observable[int]) rx.Observable[int] {
			return rx.SkipWhile(src, func(v int) bool { e.fn(v); return v < 2 })
		},
		"Take":                 func(_ *env, src rx.Observable[int]) rx.Observable[int] { return rx.Take(src, 5) },
		"Skip":                 func(_ *env, src rx.Observable[int]) rx.Observable[int] { return rx.Skip(src, 2) },
		"DistinctUntilChanged": func(_ *env, src rx.Observable[int]) rx.Observable[int] { return rx.DistinctUntilChanged(src) },
	}
}

// viaString is a chain link that changes the type twice (int → string →
// int): a fused run ends there and the next begins.
func viaString(e *env, src rx.Observable[int]) rx.Observable[int] {
	s := rx.Map(src, func(v int) string { e.fn(v); return strconv.Itoa(v) })
	return rx.Map(s, func(v string) int { n, _ := strconv.Atoi(v); return n })
}

// unfused hides src behind an observable of another package: rx guards it
// and reaches the stage below through OnNext, as for any foreign source.
type unfused struct{ src rx.Observable[int] }

func (u unfused) Subscribe(o rx.Observer[int]) rx.Subscription { return u.src.Subscribe(o) }

// fsource is a synchronous source; drive, when set, feeds it after
// subscription (a Subject).
type fsource struct {
	name string
	make func() (src rx.Observable[int], drive func(), s *rx.Subject[int])
}

func fsources() []fsource {
	const n = 12
	vals := make([]int, n)
	for i := range vals {
		vals[i] = i - i/3 // 0 1 2 2 3 4 4 ...: repeats for DistinctUntilChanged
	}
	plain := func(src rx.Observable[int]) func() (rx.Observable[int], func(), *rx.Subject[int]) {
		return func() (rx.Observable[int], func(), *rx.Subject[int]) { return src, func() {}, nil }
	}
	return []fsource{
		{"Range", plain(rx.Range(0, n))},
		{"Of", plain(rx.Of(vals...))},
		{"FromSeq", plain(rx.FromSeq(slices.Values(vals)))},
		{"Return", plain(rx.Return(7))},
		{"Empty", plain(rx.Empty[int]())},
		{"Defer", plain(rx.Defer(func() rx.Observable[int] { return rx.Range(0, n) }))},
		{"Subject", func() (rx.Observable[int], func(), *rx.Subject[int]) {
			s := rx.NewSubject[int]()
			return s, func() {
				for _, v := range vals {
					s.OnNext(v)
				}
				s.OnCompleted()
			}, s
		}},
	}
}

// scenario says where a run unsubscribes or panics: at the k-th user
// function call or the k-th value the observer receives (0: never).
type scenario struct {
	unsubAtFn, unsubAtValue, panicAtFn, panicAtValue int
}

func (s scenario) String() string {
	return fmt.Sprintf("unsub@fn%d unsub@value%d panic@fn%d panic@value%d", s.unsubAtFn, s.unsubAtValue, s.panicAtFn, s.panicAtValue)
}

func scenarios() []scenario {
	out := []scenario{{}}
	for k := 1; k <= 4; k++ {
		out = append(out, scenario{unsubAtFn: k}, scenario{unsubAtValue: k})
	}
	for k := 1; k <= 2; k++ {
		out = append(out, scenario{panicAtFn: k}, scenario{panicAtValue: k})
	}
	return out
}

// buildChain builds the named stages over src, in order; with split, each
// stage is reached through unfused.
func buildChain(e *env, src rx.Observable[int], names []string, split bool) rx.Observable[int] {
	stages := fusable()
	for _, name := range names {
		if split {
			src = unfused{src}
		}
		if name == "viaString" {
			src = viaString(e, src)
		} else {
			src = stages[name](e, src)
		}
	}
	return src
}

// runChain runs the chain over a new instance of so under sc and returns the
// log of what happened, in order. The run unsubscribes from inside through
// TakeUntil (stop emits on the calling goroutine, so the chain above it is
// cancelled at once, as by Unsubscribe): a synchronous source delivers
// inside Subscribe, before any Subscription exists.
func runChain(so fsource, names []string, split bool, sc scenario) []string {
	log, subj := runChainIn(so, names, split, sc, func(o rx.Observable[int]) rx.Observable[int] { return o }, false)
	if subj != nil {
		// The subject stays usable after a panic in a chain it fed.
		later := rxtest.Record[int](nil, subj)
		subj.OnNext(100)
		log = append(log, fmt.Sprintf("later subscriber got %v", later.Values()))
	}
	return log
}

// runChainIn is runChain with the chain wrapped by w before TakeUntil, and
// errors logged with their text when errText is set; it returns the source
// subject too (nil for other sources).
func runChainIn(so fsource, names []string, split bool, sc scenario, w func(rx.Observable[int]) rx.Observable[int], errText bool) ([]string, *rx.Subject[int]) {
	e := newEnv()
	var log []string
	stop := rx.NewSubject[int]()
	fnCalls, values := 0, 0
	unsub := func() {
		log = append(log, "unsubscribe")
		stop.OnNext(0)
	}
	e.setHook(func(v int) {
		fnCalls++
		log = append(log, "fn "+strconv.Itoa(v))
		if fnCalls == sc.unsubAtFn {
			unsub()
		}
		if fnCalls == sc.panicAtFn {
			panic(bug{})
		}
	})
	o := rx.NewObserver(func(v int) {
		values++
		log = append(log, "next "+strconv.Itoa(v))
		if values == sc.unsubAtValue {
			unsub()
		}
		if values == sc.panicAtValue {
			panic(bug{})
		}
	}, func(err error) {
		if errText {
			log = append(log, "error "+err.Error())
		} else {
			log = append(log, "error")
		}
	}, func() { log = append(log, "completed") })
	src, drive, subj := so.make()
	if p := recovered(func() {
		rx.TakeUntil(w(buildChain(e, src, names, split)), stop).Subscribe(o)
		drive()
	}); p != nil {
		log = append(log, fmt.Sprintf("panic %T", p))
	}
	return log, subj
}

// afterUnsubscribe returns what the log holds after its first
// unsubscription other than the ending it causes, or nil.
func afterUnsubscribe(log []string) []string {
	i := slices.Index(log, "unsubscribe")
	if i < 0 {
		return nil
	}
	var extra []string
	for _, s := range log[i+1:] {
		if s != "completed" && !strings.HasPrefix(s, "panic") && !strings.HasPrefix(s, "later") {
			extra = append(extra, s)
		}
	}
	return extra
}

// chainsWith returns the chains the rule runs for stage name: alone, with
// every other stage before and after it, and longer chains (with the
// type-changing link) that hold it.
func chainsWith(name string) [][]string {
	var names []string
	for n := range fusable() {
		names = append(names, n)
	}
	slices.Sort(names)
	chains := [][]string{{name}}
	for _, other := range append(names, "viaString") {
		chains = append(chains, []string{name, other}, []string{other, name})
	}
	// Longer chains, from a fixed pseudo-random walk over the stages.
	all := append(names, "viaString")
	seed := len(name)*7919 + int(name[0])
	for range 6 {
		l := 3 + seed%2
		chain := make([]string, 0, l)
		pos := seed % l
		for j := range l {
			if j == pos {
				chain = append(chain, name)
				continue
			}
			seed = (seed*1103515245 + 12345) & 0x7fffffff
			chain = append(chain, all[seed%len(all)])
		}
		seed = (seed*1103515245 + 12345) & 0x7fffffff
		chains = append(chains, chain)
	}
	return chains
}

// compareFusedAndUnfused runs every chain of x's stage over every source and
// scenario, fused and split, and reports any difference.
func compareFusedAndUnfused(r reporter, name string, run func(so fsource, names []string, split bool, sc scenario) []string) {
	r.Helper()
	compareChains(r, chainsWith(name), run)
}

// compareChains runs every chain over every source and scenario, fused and
// split, and reports any difference.
func compareChains(r reporter, chains [][]string, run func(so fsource, names []string, split bool, sc scenario) []string) {
	r.Helper()
	for _, chain := range chains {
		for _, so := range fsources() {
			for _, sc := range scenarios() {
				fused := run(so, chain, false, sc)
				split := run(so, chain, true, sc)
				if !slices.Equal(fused, split) {
					r.Errorf("%v over %s, %v:\n fused:   %v\n unfused: %v", chain, so.name, sc, fused, split)
					return
				}
				if extra := afterUnsubscribe(fused); len(extra) > 0 {
					r.Errorf("%v over %s, %v: after unsubscribing: %v", chain, so.name, sc, extra)
					return
				}
			}
		}
	}
}

// ruleFusedAndUnfusedAlike is the table's rule for the stages that fuse.
func ruleFusedAndUnfusedAlike(r reporter, x entry) {
	r.Helper()
	stage := fusable()[x.name]
	// The table's other rules, over the stage reached through OnNext.
	split := x
	split.name = x.name + " (unfused)"
	split.build = func(e *env) rx.Observable[int] { return stage(e, unfused{e.in}) }
	split.nils = nil // checked on the entry itself
	for _, rl := range rules() {
		if rl.name != fusedRuleName && rl.applies(split) {
			rl.check(r, split)
		}
	}
	compareFusedAndUnfused(r, x.name, runChain)
}

const fusedRuleName = "fused and unfused alike"

func isFusable(x entry) bool { return fusable()[x.name] != nil }

func TestEveryStageThatFusesIsInTheFusionTable(t *testing.T) {
	for _, x := range table() {
		if !x.has(input) {
			continue
		}
		e := newEnv()
		sub := x.build(e).Subscribe(newCprobe())
		fuses := rx.SubjectFuses(e.in) || rx.SubjectFuses(e.in2)
		sub.Unsubscribe()
		finish(e)
		if fuses && !isFusable(x) {
			t.Errorf("%s fuses with its source: list it in fusable() (fusion_test.go) so that the table runs it fused and unfused", x.name)
		}
		if !fuses && isFusable(x) {
			t.Errorf("%s is listed in fusable() but does not fuse with a Subject", x.name)
		}
	}
}

func TestEveryChainOfStagesFusesWithASynchronousSourceAndUnfusedDefeatsIt(t *testing.T) {
	for name := range fusable() {
		for _, chain := range chainsWith(name) {
			e := newEnv()
			want := len(chain)
			if slices.Contains(chain, "viaString") {
				// A type change ends a run: the source sees the stages up to
				// the first string Map, which counts one.
				want = slices.Index(chain, "viaString") + 1
			}
			if got := rx.FusedStages(func(src rx.Observable[int]) rx.Observable[int] { return buildChain(e, src, chain, false) }); got != want {
				t.Errorf("%v: the source runs %d stages, want %d", chain, got, want)
			}
			deferred := func(src rx.Observable[int]) rx.Observable[int] {
				return buildChain(e, rx.Defer(func() rx.Observable[int] { return src }), chain, false)
			}
			if got := rx.FusedStages(deferred); got != want {
				t.Errorf("%v over Defer: the source runs %d stages, want %d", chain, got, want)
			}
			if got := rx.FusedStages(func(src rx.Observable[int]) rx.Observable[int] { return buildChain(e, src, chain, true) }); got != 0 {
				t.Errorf("%v behind unfused: the source runs %d stages, want 0", chain, got)
			}
		}
	}
}

// TestTheFusionRuleCatchesAStageThatBehavesDifferentlyFused is the rule's
// negative control: the same comparison, with a run that forwards a value
// its user function unsubscribed in when fused (as a fused loop without the
// check after the user function would), must report it. Removing that check
// in fuse.go (the x.sc.done.Load() after x.f(v) in run) fails
// TestEveryOperatorKeepsTheContractOnTheAdversarialSchedule/Map the same
// way.
func TestTheFusionRuleCatchesAStageThatBehavesDifferentlyFused(t *testing.T) {
	broken := func(so fsource, names []string, split bool, sc scenario) []string {
		log := runChain(so, names, split, sc)
		if !split && sc.unsubAtFn > 0 {
			if i := slices.Index(log, "unsubscribe"); i >= 0 {
				log = slices.Insert(log, i+1, "next -1")
			}
		}
		return log
	}
	var r collector
	compareFusedAndUnfused(&r, "Map", broken)
	if !r.failed() {
		t.Error("the fusion rule did not catch a fused stage forwarding after its function unsubscribed")
	}
	var clean collector
	compareFusedAndUnfused(&clean, "Map", runChain)
	if clean.failed() {
		t.Errorf("the fusion rule failed the real Map: %v", clean.errs)
	}
}
