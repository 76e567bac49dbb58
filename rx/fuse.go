package rx

// Operator fusion. A synchronous source (Range, Of, FromSeq, Defer of one,
// a Subject) hands its loop to the stateless stages below it (Map, Filter,
// Do, Skip, Take, TakeWhile, SkipWhile, Scan, DistinctUntilChanged), in any
// number and order. At subscription the source asks the observer it was
// given for the chain's fused form (fuseOf): each stage in turn describes
// itself as an op (its kind, the user's function, a pointer to its state
// and scope) and names the observer below it, until the first observer that
// is not such a stage (the user's, or an operator that holds state across
// goroutines). compose then builds one step function from the ops: it cuts
// them into runs (cut) and makes one closure per run, from the last up, each
// calling the user's functions and the next run's closure directly, the last
// calling the observer below. A run is up to four Maps and Filters laid out
// on the pattern Map, Filter, Map, Filter (mfRun; one Map or Filter, or two
// with a Map, have closures of their own for Range, Of and a Subject, and
// run through mfRun's step as FromSeq's yield), or stages of the other kinds in
// the order Skip, SkipWhile, TakeWhile, Do, Map, Scan, Filter,
// DistinctUntilChanged, each at most once (stRun), or a stage alone (Take;
// a stage out of that order). The source's loop calls step for each value
// (a Subject from its delivery): a value costs those calls and no
// allocation, with no dispatch over the stages per value. Of and Range (in
// chunks of 64) hand slices to the first run's loop form, and FromSeq's
// yield is the first run's closure itself (checking FromSeq's scope too),
// so that neither makes a call per value into the chain (unless the first
// run is a stage alone). A
// stage that changes the value's type (Map from T to U) ends one fused run;
// its closure calls the next run's step. Return delivers its one value
// through OnNext: fusing it would cost more than it saves.
//
// Fusion is decided once per subscription and changes no behaviour: the
// source checks the subscription's scope before every value, and each op
// checks its stage's scope again after each user function, before the value
// goes on (a function that unsubscribed stops its own value); the state an
// op updates is its stage's own (an observer may be reached both ways, a
// BehaviorSubject's replay through OnNext and later values fused), and
// terminal notifications still go through OnCompleted and OnError. A stage
// behind an operator that does not fuse (a foreign observable, Merge, ...)
// is reached through OnNext as before, with the same checks; the
// conformance table runs every stage both ways (fusion_test.go).

// stage is implemented by the observers of the stateless stages. rxStage
// describes the stage as an op over T and returns the observer below it; ok
// is false when the stage changes the type (Map[T, U] with U ≠ T), which
// then fuses through fuser.
type stage[T any] interface {
	rxStage() (x op[T], down Observer[T], ok bool)
}

// fuser is implemented by the stages that may change the type: rxFuse
// returns the function that runs the stage and the fused chain below it.
type fuser[T any] interface{ rxFuse() func(T) bool }

type opKind uint8

const (
	opMap opKind = iota
	opFilter
	opDo
	opScan
	opSkip
	opSkipWhile
	opTakeWhile
	opTake
	opStep // a stage that builds its own closure (DistinctUntilChanged)
)

// op is one stage of a fused run over T.
type op[T any] struct {
	kind opKind
	sc   *scope // the stage's scope, checked after its user function
	f    func(T) T
	keep func(T) bool // Filter, SkipWhile, TakeWhile; opStep
	do   func(T)
	scan func(T, T) T
	acc  *T    // Scan's accumulator
	n    *int  // Skip's count
	pass *bool // SkipWhile is passing values
	tw   *takeWhileObserver[T]
	take *takeObserver[T]
	// fresh, for DistinctUntilChanged, builds the closure and loop form of
	// the stRun it ends (freshness): the stage itself, a pointer in an
	// interface, so that describing the stage allocates nothing.
	fresh freshness[T]
	// build makes an opStep stage's closure, calling next (or down.OnNext
	// when next is nil) itself.
	build func(next func(T) bool, down Observer[T]) func(T) bool
}

// freshness is DistinctUntilChanged as the last stage of an stRun: its ==
// needs a comparable T, which the run over any T has not, so the stage
// builds the run's closure (stStep, for step) and loop form (stLoop) itself,
// compiled for its comparable T (stStepEq, stLoopEq), comparing in place
// rather than calling a test per value through an interface.
type freshness[T any] interface {
	stStep(r *stRun[T], src *scope) func(T) bool
	stLoop(r *stRun[T]) func([]T, *scope) bool
}

// fused is the fused form of a chain: step runs one value through every
// stage of the run and the runs of other types that follow it, down to the
// first observer that does not fuse.
type fused[T any] struct {
	// step reports false when the chain has ended or unsubscribed (the
	// source stops); true says only that the source may go on, after
	// checking its scope as it does before every value. It is nil only in
	// the form fuseSync makes for All's own loop (allLoop), which has loop.
	step func(T) bool
	// loop, when not nil, runs the values of a slice through the chain,
	// checking the source's scope (when not nil) before each, and reports
	// as step does: the first run's work spelled out as a loop, when that
	// run is not a stage alone (see compose), so that a source holding its
	// values in a slice (Of, Range in chunks) makes no call per value into
	// the chain.
	loop func(vs []T, sc *scope) bool
}

// fuseOf returns the fused form of the chain that starts at o, or nil when
// o is not a stage that fuses.
func fuseOf[T any](o Observer[T]) *fused[T] {
	ops, o := opsOf(o)
	return fuseOps(ops, fuserOut(o), o)
}

// fuserOut is what fuseOf's chain calls after its stages over T: the step
// of the next type's run when down is a fuser (a type-changing Map, Scan),
// or nil (down.OnNext).
func fuserOut[T any](down Observer[T]) func(T) bool {
	if f, ok := down.(fuser[T]); ok {
		return f.rxFuse()
	}
	return nil
}

// fuseOps is fuseOf once the chain is walked: ops over T, then out (the
// next type's step, or All's; nil: down.OnNext).
func fuseOps[T any](ops []op[T], out func(T) bool, down Observer[T]) *fused[T] {
	if len(ops) == 0 && out == nil {
		return nil
	}
	r := &fused[T]{}
	r.step, r.loop, _ = compose(ops, out, down, nil)
	return r
}

// fuseYield returns FromSeq's yield into the fused chain that starts at o
// (nil when o does not fuse): the first run's own closure checking sc
// before the value and after it (seq computes no value past an
// unsubscription), with no call between yield and the stages (a leading
// pair laid out as an mfRun), or, when the first stage is alone, its step
// behind that check (fusedYield). It builds no loop form and no closure
// the yield does not call.
func fuseYield[T any](o Observer[T], sc *scope) func(T) bool {
	ops, o := opsOf(o)
	out := fuserOut(o)
	if len(ops) == 0 && out == nil {
		return nil
	}
	step, _, head := compose(ops, out, o, sc)
	if head != nil {
		return head
	}
	return fusedYield(step, sc)
}

// opsOf returns the ops of the stages over T that start at o, in order, and
// the first observer below them that is not such a stage.
func opsOf[T any](o Observer[T]) ([]op[T], Observer[T]) {
	var ops []op[T]
	for {
		if f, ok := o.(*forward[T]); ok {
			// Only gives the chain a scope (Defer over stages that had
			// none): the source checks that scope itself.
			o = f.down
			continue
		}
		s, ok := o.(stage[T])
		if !ok {
			break
		}
		x, down, ok := s.rxStage()
		if !ok {
			break
		}
		ops = append(ops, x)
		o = down
	}
	return ops, o
}

// run runs the values of vs through the chain in order, checking sc (when
// not nil) before each, and reports as step does.
func (r *fused[T]) run(vs []T, sc *scope) bool {
	if r.loop != nil {
		return r.loop(vs, sc)
	}
	step := r.step
	if sc == nil {
		for _, v := range vs {
			if !step(v) {
				return false
			}
		}
		return true
	}
	for _, v := range vs {
		if sc.done.Load() || !step(v) {
			return false
		}
	}
	return true
}

// The functions that build the fused closures are kept out of line
// (go:noinline): inlined into a caller in another package, which compiles
// the generic code again, their closures call atomic.Bool.Load instead of
// inlining it, a call per scope check.
//
// compose builds the chain's step at subscription. It cuts the ops into
// runs (cut): up to four Maps and Filters in a row that fit the pattern
// Map, Filter, Map, Filter (mfRun: Map→Map→Filter, Filter→Map→Filter,
// Map→Filter→Map→Filter, ... make one run; one Map or Filter, or two with
// a Map, get the closures written for them, pair, except as FromSeq's
// yield, where they run through mfRun's step), stages of the other kinds
// in stRun's order (Skip→TakeWhile→Scan→DistinctUntilChanged, ...), and
// each other stage alone. It then makes one closure per run, from the last
// up, each calling the next directly, the last calling down.OnNext (or the
// next type's step, out) itself. A value thus costs the user's functions, a
// call per run and the scope loads, with no dispatch over the stages. It
// returns the chain's step and the first run's loop form (see fused; nil
// when that run is a stage alone).
//
// With src not nil (FromSeq) it builds the yield instead: head is then the
// first run's closure checking src (an mfRun or stRun; a leading pair laid
// out as an mfRun), step the chain's step when the first stage is alone
// (head nil), and no loop form.
func compose[T any](ops []op[T], out func(T) bool, down Observer[T], src *scope) (step func(T) bool, loop func([]T, *scope) bool, head func(T) bool) {
	var buf [8]span // most chains: no allocation for the spans
	spans := cut(ops, buf[:0])
	next := out // nil: the last closure calls down.OnNext
	for j := len(spans) - 1; j >= 0; j-- {
		g := ops[spans[j].i : spans[j].i+spans[j].n]
		kind := spans[j].kind
		if j == 0 && src != nil && kind == runPair {
			kind = runMF
		}
		switch kind {
		case runOne:
			next = single(&g[0], next, down)
		case runPair:
			if j == 0 {
				loop = headLoop(g, next, down)
			}
			next = pair(g, next, down)
		case runMF:
			mf := &mfRun[T]{}
			mfFit(g, mf)
			mf.next, mf.down = next, down
			switch {
			case j > 0:
				next = mf.step(nil)
			case src != nil:
				return nil, nil, mf.step(src)
			default:
				next, loop = mf.step(nil), mf.loop()
			}
		case runST:
			st := &stRun[T]{}
			stFit(g, st)
			st.next, st.down = next, down
			switch {
			case j > 0:
				next = st.closure(nil)
			case src != nil:
				return nil, nil, st.closure(src)
			case st.fresh != nil:
				next, loop = st.closure(nil), st.fresh.stLoop(st)
			default:
				next, loop = st.closure(nil), st.loop()
			}
		}
	}
	return next, loop, nil
}

// runKind says how compose runs a span of ops.
type runKind uint8

const (
	runOne  runKind = iota // one stage: single
	runPair                // one Map or Filter, or two of which one is a Map: pair (and headLoop)
	runMF                  // up to four Maps and Filters: mfRun
	runST                  // stages of other kinds: stRun
)

// span is a run of ops[i : i+n].
type span struct {
	i, n int
	kind runKind
}

// cut cuts ops into runs from the first: at each stage the longest run that
// mfRun or stRun can lay out from there (mfRun when both can), or the stage
// alone. It appends the spans to out (compose's array on its stack).
func cut[T any](ops []op[T], out []span) []span {
	for i := 0; i < len(ops); {
		m := mfFit(ops[i:], nil)
		n := stFit(ops[i:], nil)
		sp := span{i: i, n: 1, kind: runOne}
		switch {
		case m > 0 && m >= n:
			sp.n, sp.kind = m, runMF
			if m == 1 || m == 2 && (ops[i].kind == opMap || ops[i+1].kind == opMap) {
				// Closures written for them, faster than mfRun's (which
				// skips its empty slots).
				sp.kind = runPair
			}
		case n > 1:
			sp.n, sp.kind = n, runST
		}
		out = append(out, sp)
		i += sp.n
	}
	return out
}

// mfRun is a run of Maps and Filters laid out on the pattern Map, Filter,
// Map, Filter: a slot the run does not use holds a nil function, which the
// run's closure skips (a test of a register, the same way for every value,
// where a closure per stage would cost a call). Each slot's scope is its
// stage's, checked after its function as the stage does unfused.
type mfRun[T any] struct {
	f1   func(T) T
	s1   *scope
	k1   func(T) bool
	t1   *scope
	f2   func(T) T
	s2   *scope
	k2   func(T) bool
	t2   *scope
	next func(T) bool // nil: down.OnNext
	down Observer[T]
}

// mfFit lays out the leading Maps and Filters of ops on mfRun's pattern,
// in order, as many as fit, into r (when not nil), and returns how many
// (0 when ops[0] is of another kind).
func mfFit[T any](ops []op[T], r *mfRun[T]) (n int) {
	if r == nil {
		r = new(mfRun[T]) // counting only: stays on the stack
	}
	slot := 0 // the next free slot: 0 f1, 1 k1, 2 f2, 3 k2
	for _, x := range ops {
		switch x.kind {
		case opMap:
			slot += slot % 2 // a Map goes in an even slot
			if slot > 2 {
				return n
			}
			if slot == 0 {
				r.f1, r.s1 = x.f, x.sc
			} else {
				r.f2, r.s2 = x.f, x.sc
			}
		case opFilter:
			slot += 1 - slot%2 // a Filter in an odd one
			if slot > 3 {
				return n
			}
			if slot == 1 {
				r.k1, r.t1 = x.keep, x.sc
			} else {
				r.k2, r.t2 = x.keep, x.sc
			}
		default:
			return n
		}
		slot++
		n++
	}
	return n
}

// step returns the run's closure. src, when not nil, is the source's scope,
// checked before the value and after it as FromSeq's yield does (fuseYield).
//
//go:noinline // see compose
func (r *mfRun[T]) step(src *scope) func(T) bool {
	return func(v T) bool {
		if src != nil && src.done.Load() {
			return false
		}
		if r.f1 != nil {
			v = r.f1(v)
			if r.s1.done.Load() {
				return false
			}
		}
		if r.k1 != nil {
			if !r.k1(v) {
				return src == nil || !src.done.Load()
			}
			if r.t1.done.Load() {
				return false
			}
		}
		if r.f2 != nil {
			v = r.f2(v)
			if r.s2.done.Load() {
				return false
			}
		}
		if r.k2 != nil {
			if !r.k2(v) {
				return src == nil || !src.done.Load()
			}
			if r.t2.done.Load() {
				return false
			}
		}
		if r.next == nil {
			r.down.OnNext(v)
		} else if !r.next(v) {
			return false
		}
		return src == nil || !src.done.Load()
	}
}

// loop returns the run's loop form (see fused): per value, what step does.
// Both read the run's fields where they use them, from r (step) or from a
// copy of it on the loop's stack (loop), one load each: held in locals,
// every one of them would be reloaded into a register after each call.
//
//go:noinline // see compose
func (r *mfRun[T]) loop() func([]T, *scope) bool {
	return func(vs []T, sc *scope) bool {
		r := *r // on the stack: see above
		for _, v := range vs {
			if sc != nil && sc.done.Load() {
				return false
			}
			if r.f1 != nil {
				v = r.f1(v)
				if r.s1.done.Load() {
					return false
				}
			}
			if r.k1 != nil {
				if !r.k1(v) {
					continue
				}
				if r.t1.done.Load() {
					return false
				}
			}
			if r.f2 != nil {
				v = r.f2(v)
				if r.s2.done.Load() {
					return false
				}
			}
			if r.k2 != nil {
				if !r.k2(v) {
					continue
				}
				if r.t2.done.Load() {
					return false
				}
			}
			if r.next == nil {
				r.down.OnNext(v)
			} else if !r.next(v) {
				return false
			}
		}
		return true
	}
}

// stRun is a run of stages of other kinds, in the order Skip, SkipWhile,
// TakeWhile, Do, Map, Scan, Filter, DistinctUntilChanged, each at most once
// and any of them absent (nil): Skip→TakeWhile→Scan→DistinctUntilChanged,
// SkipWhile→Map, Map→Scan→Filter, ... make one closure, which keeps the
// stages' state where they do (pointers into their observers) and checks
// each stage's scope after its function as the stage does unfused (single
// spells out the same per kind).
type stRun[T any] struct {
	skipN  *int // Skip's count
	skipW  func(T) bool
	swPass *bool // SkipWhile is passing values
	swSc   *scope
	tw     *takeWhileObserver[T]
	twKeep func(T) bool
	twSc   *scope
	do     func(T)
	doSc   *scope
	f      func(T) T
	fSc    *scope
	scan   func(T, T) T
	acc    *T // Scan's accumulator
	scanSc *scope
	keep   func(T) bool
	keepSc *scope
	fresh  freshness[T] // DistinctUntilChanged, which builds the run's closure and loop
	next   func(T) bool // nil: down.OnNext
	down   Observer[T]
}

// stFit lays out the leading stages of ops on stRun's order, as many as
// fit, into r (when not nil), and returns how many.
func stFit[T any](ops []op[T], r *stRun[T]) (n int) {
	if r == nil {
		r = new(stRun[T]) // counting only: stays on the stack
	}
	last := -1 // the slot of the stage before, in stRun's order
	for _, x := range ops {
		slot := -1
		switch x.kind {
		case opSkip:
			slot = 0
		case opSkipWhile:
			slot = 1
		case opTakeWhile:
			slot = 2
		case opDo:
			slot = 3
		case opMap:
			slot = 4
		case opScan:
			slot = 5
		case opFilter:
			slot = 6
		case opStep:
			if x.fresh != nil {
				slot = 7
			}
		}
		if slot <= last {
			break
		}
		switch slot {
		case 0:
			r.skipN = x.n
		case 1:
			r.skipW, r.swPass, r.swSc = x.keep, x.pass, x.sc
		case 2:
			r.tw, r.twKeep, r.twSc = x.tw, x.keep, x.sc
		case 3:
			r.do, r.doSc = x.do, x.sc
		case 4:
			r.f, r.fSc = x.f, x.sc
		case 5:
			r.scan, r.acc, r.scanSc = x.scan, x.acc, x.sc
		case 6:
			r.keep, r.keepSc = x.keep, x.sc
		case 7:
			r.fresh = x.fresh
		}
		last = slot
		n++
	}
	return n
}

// settle, on a loop's own copy of the run, drops the stages that have done
// their part (Skip's count spent, SkipWhile passing): they stay so, and the
// loop then tests a nil slot instead of loading their state per value. It
// reports false when TakeWhile has ended: within the loop that only
// happens just before it returns, so the loop tests it once, here. This
// rests on a stage having one upstream: only the running loop can spend
// the count, pass SkipWhile or end TakeWhile while it runs.
func (r *stRun[T]) settle() bool {
	if r.skipN != nil && *r.skipN <= 0 {
		r.skipN = nil
	}
	if r.skipW != nil && *r.swPass {
		r.skipW = nil
	}
	return r.tw == nil || !r.tw.done
}

// closure returns the run's closure; src as for mfRun.step.
func (r *stRun[T]) closure(src *scope) func(T) bool {
	if r.fresh != nil {
		return r.fresh.stStep(r, src)
	}
	return r.step(src)
}

// step returns the closure of a run without DistinctUntilChanged (which
// builds its own, stStepEq); src as for mfRun.step. step, loop, stStepEq and
// stLoopEq do the same per value: keep them alike.
//
//go:noinline // see compose
func (r *stRun[T]) step(src *scope) func(T) bool {
	return func(v T) bool {
		if src != nil && src.done.Load() {
			return false
		}
		if r.skipN != nil && *r.skipN > 0 {
			*r.skipN--
			return src == nil || !src.done.Load()
		}
		if r.skipW != nil && !*r.swPass {
			if r.skipW(v) || r.swSc.done.Load() {
				return src == nil || !src.done.Load()
			}
			*r.swPass = true
		}
		if r.tw != nil {
			if r.tw.done {
				return false
			}
			ok := r.twKeep(v)
			if r.twSc.done.Load() { // keep unsubscribed: neither the value nor the end
				r.tw.done = true
				return false
			}
			if !ok {
				r.tw.end()
				return false
			}
		}
		if r.do != nil {
			r.do(v)
			if r.doSc.done.Load() {
				return false
			}
		}
		if r.f != nil {
			v = r.f(v)
			if r.fSc.done.Load() {
				return false
			}
		}
		if r.scan != nil {
			v = r.scan(*r.acc, v)
			*r.acc = v
			if r.scanSc.done.Load() {
				return false
			}
		}
		if r.keep != nil {
			if !r.keep(v) {
				return src == nil || !src.done.Load()
			}
			if r.keepSc.done.Load() {
				return false
			}
		}
		if r.next == nil {
			r.down.OnNext(v)
		} else if !r.next(v) {
			return false
		}
		return src == nil || !src.done.Load()
	}
}

// loop returns the run's loop form for a run without DistinctUntilChanged
// (which builds its own, stLoopEq): per value, what step does, Skip and
// SkipWhile run ahead of the loop (lead) and the stages settle drops aside
// (keep them alike).
//
//go:noinline // see compose
func (r *stRun[T]) loop() func([]T, *scope) bool {
	return func(vs []T, sc *scope) bool {
		r := stLoopRun[T]{stRun: *r, vs: vs, sc: sc} // on the stack: see stLoopRun
		i, ok := r.lead(vs, sc)
		if !ok {
			return false
		}
		for r.i = i; r.i < len(r.vs); r.i++ {
			v := r.vs[r.i]
			if r.sc != nil && r.sc.done.Load() {
				return false
			}
			if r.tw != nil {
				ok := r.twKeep(v)
				if r.twSc.done.Load() { // keep unsubscribed: neither the value nor the end
					r.tw.done = true
					return false
				}
				if !ok {
					r.tw.end()
					return false
				}
			}
			if r.do != nil {
				r.do(v)
				if r.doSc.done.Load() {
					return false
				}
			}
			if r.f != nil {
				v = r.f(v)
				if r.fSc.done.Load() {
					return false
				}
			}
			if r.scan != nil {
				v = r.scan(*r.acc, v)
				*r.acc = v
				if r.scanSc.done.Load() {
					return false
				}
			}
			if r.keep != nil {
				if !r.keep(v) {
					continue
				}
				if r.keepSc.done.Load() {
					return false
				}
			}
			if r.next == nil {
				r.down.OnNext(v)
			} else if !r.next(v) {
				return false
			}
		}
		return true
	}
}

// stLoopRun is a loop form's copy of its run (stRun.loop, stLoopEq), with
// the loop's slice, index and source scope: kept in the struct, in memory
// (see mfRun.loop), rather than in registers, which the compiler reloaded
// all of after every call (six loads per call at 1e7b272); the loop reads
// them once per value, at its head.
type stLoopRun[T any] struct {
	stRun[T]
	vs []T
	i  int
	sc *scope
}

// stStepEq is stRun.step for a run that ends in DistinctUntilChanged d,
// compiled for a comparable T, as stLoopEq is its loop: d.fresh is inlined
// rather than called per value through an interface. It is FromSeq's yield
// and a Subject's step for such a run.
//
//go:noinline // see compose
func stStepEq[T comparable](r *stRun[T], d *distinctObserver[T], src *scope) func(T) bool {
	return func(v T) bool {
		if src != nil && src.done.Load() {
			return false
		}
		if r.skipN != nil && *r.skipN > 0 {
			*r.skipN--
			return src == nil || !src.done.Load()
		}
		if r.skipW != nil && !*r.swPass {
			if r.skipW(v) || r.swSc.done.Load() {
				return src == nil || !src.done.Load()
			}
			*r.swPass = true
		}
		if r.tw != nil {
			if r.tw.done {
				return false
			}
			ok := r.twKeep(v)
			if r.twSc.done.Load() { // keep unsubscribed: neither the value nor the end
				r.tw.done = true
				return false
			}
			if !ok {
				r.tw.end()
				return false
			}
		}
		if r.do != nil {
			r.do(v)
			if r.doSc.done.Load() {
				return false
			}
		}
		if r.f != nil {
			v = r.f(v)
			if r.fSc.done.Load() {
				return false
			}
		}
		if r.scan != nil {
			v = r.scan(*r.acc, v)
			*r.acc = v
			if r.scanSc.done.Load() {
				return false
			}
		}
		if r.keep != nil {
			if !r.keep(v) {
				return src == nil || !src.done.Load()
			}
			if r.keepSc.done.Load() {
				return false
			}
		}
		// d.fresh, spelled out as in stLoopEq: T is comparable here.
		if d.seen && v == d.last {
			return src == nil || !src.done.Load()
		}
		d.seen, d.last = true, v
		if r.next == nil {
			r.down.OnNext(v)
		} else if !r.next(v) {
			return false
		}
		return src == nil || !src.done.Load()
	}
}

// stLoopEq is stRun.loop for a run that ends in DistinctUntilChanged d,
// compiled for a comparable T: d.fresh is inlined into the loop rather than
// called per value through an interface (the three forms, step, loop and
// this one, do the same per value: keep them alike).
//
//go:noinline // see compose
func stLoopEq[T comparable](r *stRun[T], d *distinctObserver[T]) func([]T, *scope) bool {
	return func(vs []T, sc *scope) bool {
		// On the stack, d too: see stLoopRun (held in a register, d was
		// reloaded after every call).
		r := stEqRun[T]{stLoopRun: stLoopRun[T]{stRun: *r, vs: vs, sc: sc}, d: d}
		i, ok := r.lead(vs, sc)
		if !ok {
			return false
		}
		for r.i = i; r.i < len(r.vs); r.i++ {
			v := r.vs[r.i]
			if r.sc != nil && r.sc.done.Load() {
				return false
			}
			if r.tw != nil {
				ok := r.twKeep(v)
				if r.twSc.done.Load() { // keep unsubscribed: neither the value nor the end
					r.tw.done = true
					return false
				}
				if !ok {
					r.tw.end()
					return false
				}
			}
			if r.do != nil {
				r.do(v)
				if r.doSc.done.Load() {
					return false
				}
			}
			if r.f != nil {
				v = r.f(v)
				if r.fSc.done.Load() {
					return false
				}
			}
			if r.scan != nil {
				v = r.scan(*r.acc, v)
				*r.acc = v
				if r.scanSc.done.Load() {
					return false
				}
			}
			if r.keep != nil {
				if !r.keep(v) {
					continue
				}
				if r.keepSc.done.Load() {
					return false
				}
			}
			// d.fresh, spelled out: as an inlined call its result was
			// made into a bool and tested again (three instructions).
			if d := r.d; d.seen && v == d.last {
				continue
			} else {
				d.seen, d.last = true, v
			}
			if r.next == nil {
				r.down.OnNext(v)
			} else if !r.next(v) {
				return false
			}
		}
		return true
	}
}

// stEqRun is stLoopEq's copy of its run, with the DistinctUntilChanged
// that ends it.
type stEqRun[T comparable] struct {
	stLoopRun[T]
	d *distinctObserver[T]
}

// lead runs the values of vs through Skip and SkipWhile (the loop's copy
// of the run, r) until both have done their part, checking sc before each
// value as the loop does, and drops them from r (they stay done: see
// settle). It returns the index of the first value they pass, which the
// loop takes from TakeWhile on (checking sc before it again), and false
// when TakeWhile has ended or sc is done. The loop then makes no test for
// Skip or SkipWhile per value.
func (r *stRun[T]) lead(vs []T, sc *scope) (int, bool) {
	if !r.settle() {
		return 0, false
	}
	i := 0
	for ; i < len(vs) && (r.skipN != nil || r.skipW != nil); i++ {
		if sc != nil && sc.done.Load() {
			return i, false
		}
		if r.skipN != nil {
			if *r.skipN > 0 {
				*r.skipN--
				continue
			}
			r.skipN = nil
		}
		if r.skipW != nil {
			if r.skipW(vs[i]) || r.swSc.done.Load() {
				continue
			}
			*r.swPass = true
			r.skipW = nil
		}
		break
	}
	return i, true
}

// headLoop returns the loop form of a leading pair's closure (see cut: g
// is a Map and a Filter in either order, two Maps, or one of them), which
// calls next (or down.OnNext when next is nil); nil only as a defensive
// default. It does per value what the closure does.
//
//go:noinline // see compose
func headLoop[T any](g []op[T], next func(T) bool, down Observer[T]) func([]T, *scope) bool {
	switch {
	case len(g) == 2 && g[0].kind == opMap && g[1].kind == opFilter:
		f, fsc, keep, ksc := g[0].f, g[0].sc, g[1].keep, g[1].sc
		return func(vs []T, sc *scope) bool {
			for _, v := range vs {
				if sc != nil && sc.done.Load() {
					return false
				}
				v = f(v)
				if fsc.done.Load() {
					return false
				}
				if !keep(v) {
					continue
				}
				if ksc.done.Load() {
					return false
				}
				if next == nil {
					down.OnNext(v)
				} else if !next(v) {
					return false
				}
			}
			return true
		}
	case len(g) == 2 && g[0].kind == opFilter && g[1].kind == opMap:
		keep, ksc, f, fsc := g[0].keep, g[0].sc, g[1].f, g[1].sc
		return func(vs []T, sc *scope) bool {
			for _, v := range vs {
				if sc != nil && sc.done.Load() {
					return false
				}
				if !keep(v) {
					continue
				}
				if ksc.done.Load() {
					return false
				}
				v = f(v)
				if fsc.done.Load() {
					return false
				}
				if next == nil {
					down.OnNext(v)
				} else if !next(v) {
					return false
				}
			}
			return true
		}
	case len(g) == 2 && g[0].kind == opMap && g[1].kind == opMap:
		f, fsc, h, hsc := g[0].f, g[0].sc, g[1].f, g[1].sc
		return func(vs []T, sc *scope) bool {
			for _, v := range vs {
				if sc != nil && sc.done.Load() {
					return false
				}
				v = f(v)
				if fsc.done.Load() {
					return false
				}
				v = h(v)
				if hsc.done.Load() {
					return false
				}
				if next == nil {
					down.OnNext(v)
				} else if !next(v) {
					return false
				}
			}
			return true
		}
	case len(g) == 1 && g[0].kind == opMap:
		f, fsc := g[0].f, g[0].sc
		return func(vs []T, sc *scope) bool {
			for _, v := range vs {
				if sc != nil && sc.done.Load() {
					return false
				}
				v = f(v)
				if fsc.done.Load() {
					return false
				}
				if next == nil {
					down.OnNext(v)
				} else if !next(v) {
					return false
				}
			}
			return true
		}
	case len(g) == 1 && g[0].kind == opFilter:
		keep, ksc := g[0].keep, g[0].sc
		return func(vs []T, sc *scope) bool {
			for _, v := range vs {
				if sc != nil && sc.done.Load() {
					return false
				}
				if !keep(v) {
					continue
				}
				if ksc.done.Load() {
					return false
				}
				if next == nil {
					down.OnNext(v)
				} else if !next(v) {
					return false
				}
			}
			return true
		}
	}
	return nil
}

//go:noinline // see compose
func mapFilter[T any](f func(T) T, fsc *scope, keep func(T) bool, ksc *scope, next func(T) bool, down Observer[T]) func(T) bool {
	if next == nil {
		return func(v T) bool {
			v = f(v)
			if fsc.done.Load() {
				return false
			}
			if !keep(v) {
				return true
			}
			if ksc.done.Load() {
				return false
			}
			down.OnNext(v)
			return true
		}
	}
	return func(v T) bool {
		v = f(v)
		if fsc.done.Load() {
			return false
		}
		if !keep(v) {
			return true
		}
		return !ksc.done.Load() && next(v)
	}
}

//go:noinline // see compose
func filterMap[T any](keep func(T) bool, ksc *scope, f func(T) T, fsc *scope, next func(T) bool, down Observer[T]) func(T) bool {
	if next == nil {
		return func(v T) bool {
			if !keep(v) {
				return true
			}
			if ksc.done.Load() {
				return false
			}
			v = f(v)
			if fsc.done.Load() {
				return false
			}
			down.OnNext(v)
			return true
		}
	}
	return func(v T) bool {
		if !keep(v) {
			return true
		}
		if ksc.done.Load() {
			return false
		}
		v = f(v)
		return !fsc.done.Load() && next(v)
	}
}

//go:noinline // see compose
func mapMap[T any](f func(T) T, fsc *scope, g func(T) T, gsc *scope, next func(T) bool, down Observer[T]) func(T) bool {
	if next == nil {
		return func(v T) bool {
			v = f(v)
			if fsc.done.Load() {
				return false
			}
			v = g(v)
			if gsc.done.Load() {
				return false
			}
			down.OnNext(v)
			return true
		}
	}
	return func(v T) bool {
		v = f(v)
		if fsc.done.Load() {
			return false
		}
		v = g(v)
		return !gsc.done.Load() && next(v)
	}
}

// pair is the closure of one Map or Filter, or two of which one is a Map
// (g), followed by next (or down).
func pair[T any](g []op[T], next func(T) bool, down Observer[T]) func(T) bool {
	if len(g) == 1 {
		return single(&g[0], next, down)
	}
	a, b := &g[0], &g[1]
	switch {
	case a.kind == opMap && b.kind == opFilter:
		return mapFilter(a.f, a.sc, b.keep, b.sc, next, down)
	case a.kind == opFilter && b.kind == opMap:
		return filterMap(a.keep, a.sc, b.f, b.sc, next, down)
	}
	return mapMap(a.f, a.sc, b.f, b.sc, next, down)
}

// single is the closure of one stage x followed by next (or down).
//
//go:noinline // see compose
func single[T any](x *op[T], next func(T) bool, down Observer[T]) func(T) bool {
	sc := x.sc
	switch x.kind {
	case opMap:
		f := x.f
		if next == nil {
			return func(v T) bool {
				v = f(v)
				if sc.done.Load() {
					return false
				}
				down.OnNext(v)
				return true
			}
		}
		return func(v T) bool {
			v = f(v)
			return !sc.done.Load() && next(v)
		}
	case opFilter:
		keep := x.keep
		if next == nil {
			return func(v T) bool {
				if !keep(v) {
					return true
				}
				if sc.done.Load() {
					return false
				}
				down.OnNext(v)
				return true
			}
		}
		return func(v T) bool {
			if !keep(v) {
				return true
			}
			return !sc.done.Load() && next(v)
		}
	}
	if x.kind == opStep {
		return x.build(next, down)
	}
	if next == nil {
		next = func(v T) bool { down.OnNext(v); return true }
	}
	switch x.kind {
	case opDo:
		do := x.do
		return func(v T) bool {
			do(v)
			return !sc.done.Load() && next(v)
		}
	case opScan:
		scan, acc := x.scan, x.acc
		return func(v T) bool {
			v = scan(*acc, v)
			*acc = v
			return !sc.done.Load() && next(v)
		}
	case opSkip:
		n := x.n
		return func(v T) bool {
			if *n > 0 {
				*n--
				return true
			}
			return next(v)
		}
	case opSkipWhile:
		skip, pass := x.keep, x.pass
		return func(v T) bool {
			if !*pass {
				if skip(v) || sc.done.Load() {
					return true
				}
				*pass = true
			}
			return next(v)
		}
	case opTakeWhile:
		t, keep := x.tw, x.keep
		return func(v T) bool {
			if t.done {
				return false
			}
			ok := keep(v)
			if sc.done.Load() { // keep unsubscribed: neither the value nor the end
				t.done = true
				return false
			}
			if !ok {
				t.end()
				return false
			}
			return next(v)
		}
	default: // opTake
		t := x.take
		return func(v T) bool {
			if t.left <= 0 {
				return false
			}
			t.left--
			if t.left > 0 {
				return next(v)
			}
			// The last value: the rest of the chain sees it, then this
			// Take ends (after any Take below it that ended on it too).
			next(v)
			t.end()
			return false
		}
	}
}

func (m *mapObserver[T, U]) rxStage() (op[T], Observer[T], bool) {
	f, ok := any(m.f).(func(T) T)
	if !ok {
		return op[T]{}, nil, false
	}
	return op[T]{kind: opMap, sc: m.sc, f: f}, any(m.down).(Observer[T]), true
}

//go:noinline // see compose
func (m *mapObserver[T, U]) rxFuse() func(T) bool {
	f, sc, down := m.f, m.sc, m.down
	if next := fuseOf(down); next != nil {
		step := next.step
		return func(v T) bool {
			u := f(v)
			return !sc.done.Load() && step(u)
		}
	}
	return func(v T) bool {
		u := f(v)
		if sc.done.Load() {
			return false
		}
		down.OnNext(u)
		return true
	}
}

func (fo *filterObserver[T]) rxStage() (op[T], Observer[T], bool) {
	return op[T]{kind: opFilter, sc: fo.sc, keep: fo.keep}, fo.down, true
}

func (s *scanObserver[T, A]) rxStage() (op[T], Observer[T], bool) {
	f, ok := any(s.f).(func(T, T) T)
	if !ok {
		return op[T]{}, nil, false
	}
	return op[T]{kind: opScan, sc: s.sc, scan: f, acc: any(&s.acc).(*T)}, any(s.down).(Observer[T]), true
}

//go:noinline // see compose
func (s *scanObserver[T, A]) rxFuse() func(T) bool {
	f, sc, down := s.f, s.sc, s.down
	if next := fuseOf(down); next != nil {
		step := next.step
		return func(v T) bool {
			s.acc = f(s.acc, v)
			return !sc.done.Load() && step(s.acc)
		}
	}
	return func(v T) bool {
		s.acc = f(s.acc, v)
		if sc.done.Load() {
			return false
		}
		down.OnNext(s.acc)
		return true
	}
}

func (s *skipObserver[T]) rxStage() (op[T], Observer[T], bool) {
	return op[T]{kind: opSkip, n: &s.left}, s.down, true
}

func (s *skipWhileObserver[T]) rxStage() (op[T], Observer[T], bool) {
	return op[T]{kind: opSkipWhile, sc: s.sc, keep: s.skip, pass: &s.passing}, s.down, true
}

func (t *takeWhileObserver[T]) rxStage() (op[T], Observer[T], bool) {
	return op[T]{kind: opTakeWhile, sc: t.sc, keep: t.keep, tw: t}, t.down, true
}

func (t *takeObserver[T]) rxStage() (op[T], Observer[T], bool) {
	return op[T]{kind: opTake, take: t}, t.down, true
}

func (d *distinctObserver[T]) rxStage() (op[T], Observer[T], bool) {
	return op[T]{kind: opStep, build: d.step, fresh: d}, d.down, true
}

// step compares with == in the closure itself (T is comparable here, not
// in the fused run).
//
//go:noinline // see compose
func (d *distinctObserver[T]) step(next func(T) bool, down Observer[T]) func(T) bool {
	if next == nil {
		return func(v T) bool {
			if d.fresh(v) {
				down.OnNext(v)
			}
			return true
		}
	}
	return func(v T) bool {
		return !d.fresh(v) || next(v)
	}
}

// stLoop and stStep are freshness's.
func (d *distinctObserver[T]) stLoop(r *stRun[T]) func([]T, *scope) bool { return stLoopEq(r, d) }
func (d *distinctObserver[T]) stStep(r *stRun[T], src *scope) func(T) bool {
	return stStepEq(r, d, src)
}

func (d *doObserver[T]) rxStage() (op[T], Observer[T], bool) {
	return op[T]{kind: opDo, sc: d.sc, do: d.next}, d.down, true
}
