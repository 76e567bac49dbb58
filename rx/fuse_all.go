package rx

// All's part in fusion. A source whose loop runs inside its Subscribe, on
// the goroutine that called it, and calls the fused step nowhere else (Of,
// Range; Defer's inner source through it; not FromSeq, whose seq may call
// yield from anywhere) asks for the chain's
// fused form with fuseSync instead of fuseOf. When that chain of stateless
// stages ends at All's observer and the call is made on the ranging
// goroutine with nothing queued and no body running, All's observer becomes
// the chain's last step (syncStep): the last stage's closure calls it
// directly, and it runs the loop body with no goroutine-identity read and no
// interface call. When the chain is no stages or one run of Maps and
// Filters (mfRun), the chain's loop form is All's own (allLoop), which calls
// the body itself: no step of All's between the stages and the body.
// Everywhere else (a Subject, which calls the step from
// whichever goroutine delivers; a source subscribed from another goroutine,
// by Concat after a goroutine source, say; a type-changing Map, through
// which fuseSync does not look) All's observer does not fuse (fuseOf
// does not ask it: it is not a fuser), and its OnNext tells
// the ranging goroutine from the others as before.

// fuseSync is fuseOf for a source that calls the step it returns only
// inside its own Subscribe, on the goroutine that called Subscribe. It walks
// the chain once, as fuseOf does.
func fuseSync[T any](o Observer[T]) *fused[T] {
	ops, down := opsOf(o)
	if a, ok := down.(*allObserver[T]); ok && mfFit(ops, nil) == len(ops) && a.syncReady() {
		// No stages, or one run of Maps and Filters (every shape of up
		// to four of them that fits mfRun): its loop runs the body itself.
		r := &mfRun[T]{}
		mfFit(ops, r)
		return &fused[T]{loop: r.allLoop(a)}
	}
	return fuseOps(ops, syncOut(down), down)
}

// allLoop is the loop form of a chain that is one mfRun ending at All's
// observer a, once syncReady holds: per value the run's functions and
// scope checks (as mfRun.loop), then the loop body, called from the loop
// itself (no step between them: the call into a step of All's costs about
// as much as the body, syncStep below). The fused form it makes has no
// step: Of and Range, which alone ask fuseSync, use the loop form when
// there is one.
//
// The body runs as in syncStep, a break unsubscribing before the loop goes
// on; with a ctx that cannot end it needs no flag around it and no flush
// after it (see allLoopChecked), and, when every stage has All's scope,
// no scope check per value (allLoopOwn). With a ctx that can end, each
// value goes through run (ctx checked before the body and after what it
// caused), as syncStep's does.
//
//go:noinline // see compose
func (r *mfRun[T]) allLoop(a *allObserver[T]) func([]T, *scope) bool {
	if !a.lasting || !r.scopedBy(a.sc) {
		return r.allLoopChecked(a)
	}
	return r.allLoopOwn(a)
}

// scopedBy reports whether every stage of the run has sc as its scope.
func (r *mfRun[T]) scopedBy(sc *scope) bool {
	return (r.f1 == nil || r.s1 == sc) && (r.k1 == nil || r.t1 == sc) &&
		(r.f2 == nil || r.s2 == sc) && (r.k2 == nil || r.t2 == sc)
}

// allLoopOwn is allLoop when ctx cannot end and every stage of the run
// has All's own scope, a.sc: for a chunk whose source passes a.sc too, it
// checks a.sc once, before the chunk, not before and after each function
// per value. Nothing can cancel a.sc while the chunk runs: it is a root
// scope no one outside All holds (the source and the stages only read it;
// the Subscription All gets is dropped), ctx cannot end (no AfterFunc),
// nothing delivers to a while the body runs (see allLoopChecked), and of
// All's own code only a break cancels it, here, which ends the chunk. A
// user function can thus not unsubscribe its own value here, which is what
// the checks after it are for elsewhere. Any other chunk (another scope, a
// stopped loop) goes to allLoopChecked, the loop with every check.
//
// The run's shapes of up to two stages (none, Map, Filter, Map→Filter,
// Filter→Map, Map→Map) get loops of their own, as pair and headLoop do
// elsewhere: testing the run's empty slots costs about a nanosecond per
// value; longer runs test them (allOwnRun).
//
//go:noinline // see compose
func (r *mfRun[T]) allLoopOwn(a *allObserver[T]) func([]T, *scope) bool {
	f1, k1, f2, k2, yield := r.f1, r.k1, r.f2, r.k2, a.yield
	switch {
	case k2 != nil || f1 != nil && k1 != nil && f2 != nil:
		// Three stages or more: the slot tests below.
	case f1 == nil && k1 == nil && f2 == nil:
		return func(vs []T, sc *scope) bool {
			if !a.owns(sc) {
				return r.unowned(a, vs, sc)
			}
			for _, v := range vs {
				if !yield(v, nil) {
					return a.broke()
				}
			}
			return true
		}
	case k1 == nil && (f1 == nil) != (f2 == nil):
		f := f1
		if f == nil {
			f = f2
		}
		return func(vs []T, sc *scope) bool {
			if !a.owns(sc) {
				return r.unowned(a, vs, sc)
			}
			for _, v := range vs {
				if !yield(f(v), nil) {
					return a.broke()
				}
			}
			return true
		}
	case f1 == nil && f2 == nil:
		return func(vs []T, sc *scope) bool {
			if !a.owns(sc) {
				return r.unowned(a, vs, sc)
			}
			for _, v := range vs {
				if k1(v) && !yield(v, nil) {
					return a.broke()
				}
			}
			return true
		}
	case f1 != nil && k1 != nil:
		return func(vs []T, sc *scope) bool {
			if !a.owns(sc) {
				return r.unowned(a, vs, sc)
			}
			for _, v := range vs {
				if v = f1(v); k1(v) && !yield(v, nil) {
					return a.broke()
				}
			}
			return true
		}
	case k1 != nil:
		return func(vs []T, sc *scope) bool {
			if !a.owns(sc) {
				return r.unowned(a, vs, sc)
			}
			for _, v := range vs {
				if k1(v) && !yield(f2(v), nil) {
					return a.broke()
				}
			}
			return true
		}
	default: // Map→Map
		return func(vs []T, sc *scope) bool {
			if !a.owns(sc) {
				return r.unowned(a, vs, sc)
			}
			for _, v := range vs {
				if !yield(f2(f1(v)), nil) {
					return a.broke()
				}
			}
			return true
		}
	}
	return func(vs []T, sc *scope) bool {
		if !a.owns(sc) {
			return r.unowned(a, vs, sc)
		}
		// On the stack, read where used (see mfRun.loop).
		l := allOwnRun[T]{f1: r.f1, k1: r.k1, f2: r.f2, k2: r.k2, yield: a.yield}
		for _, v := range vs {
			if l.f1 != nil {
				v = l.f1(v)
			}
			if l.k1 != nil && !l.k1(v) {
				continue
			}
			if l.f2 != nil {
				v = l.f2(v)
			}
			if l.k2 != nil && !l.k2(v) {
				continue
			}
			if !l.yield(v, nil) {
				return a.broke()
			}
		}
		return true
	}
}

// allOwnRun is allLoopOwn's copy of its run of three or four stages.
type allOwnRun[T any] struct {
	f1    func(T) T
	k1    func(T) bool
	f2    func(T) T
	k2    func(T) bool
	yield func(T, error) bool
}

// unowned runs a chunk allLoopOwn may not run through the loop with every
// check, built for it: Of and Range, passing a.sc, hand over no such chunk
// while the loop goes on, so no closure is made per subscription for it.
func (r *mfRun[T]) unowned(a *allObserver[T], vs []T, sc *scope) bool {
	return r.allLoopChecked(a)(vs, sc)
}

// owns reports whether a chunk passing sc may run in allLoopOwn: sc is
// All's own scope and the loop goes on.
func (a *allObserver[T]) owns(sc *scope) bool {
	return sc == a.sc && !a.stopped && !sc.done.Load()
}

// broke ends the loop after the body broke out of it (yield returned
// false), as every path that calls yield does, and returns false.
func (a *allObserver[T]) broke() bool {
	a.stopped = true
	a.sc.cancel()
	return false
}

// allLoopChecked is allLoop with every check: before each value the
// source's scope, after each function its stage's.
//
//go:noinline // see compose
func (r *mfRun[T]) allLoopChecked(a *allObserver[T]) func([]T, *scope) bool {
	return func(vs []T, sc *scope) bool {
		// On the stack, read where used (see mfRun.loop): only the
		// loop's slice, index and scope are reloaded after each call.
		l := allRun[T]{mfRun: *r, a: a, yield: a.yield, lasting: a.lasting}
		if a.stopped {
			return false
		}
		for _, v := range vs {
			if sc != nil && sc.done.Load() {
				return false
			}
			if l.f1 != nil {
				v = l.f1(v)
				if l.s1.done.Load() {
					return false
				}
			}
			if l.k1 != nil {
				if !l.k1(v) {
					continue
				}
				if l.t1.done.Load() {
					return false
				}
			}
			if l.f2 != nil {
				v = l.f2(v)
				if l.s2.done.Load() {
					return false
				}
			}
			if l.k2 != nil {
				if !l.k2(v) {
					continue
				}
				if l.t2.done.Load() {
					return false
				}
			}
			if !l.lasting {
				if !l.a.run(v) {
					return false
				}
				continue
			}
			// No inBody flag and no flush of what the body caused: nothing
			// can deliver to a while the body runs here. a is held only by
			// All and by this chain (Of or Range, through Defer's forward
			// at most, then Maps and Filters: fuseSync saw no other
			// observer), whose only deliveries come from this loop, which
			// is the body's caller; a foreign Observable gets a guard, so
			// never reaches this loop. syncReady held when the loop was
			// made, so nothing was queued or handed over.
			if !l.yield(v, nil) {
				l.a.stopped = true
				l.a.sc.cancel()
				return false
			}
		}
		return true
	}
}

// allRun is allLoop's copy of its run, with All's observer and body.
type allRun[T any] struct {
	mfRun[T]
	a       *allObserver[T]
	yield   func(T, error) bool
	lasting bool
}

// syncOut is what fuseSync's chain calls after its stages over T: All's
// step when down is All's observer and syncReady holds, a fuser's step, or
// nil (down.OnNext).
func syncOut[T any](down Observer[T]) func(T) bool {
	switch x := down.(type) {
	case *allObserver[T]:
		if x.syncReady() {
			return x.syncStep()
		}
	case fuser[T]:
		return x.rxFuse()
	}
	return nil
}

// syncReady reports whether a synchronous loop starting now on the calling
// goroutine may run the body directly: it is the ranging goroutine, no body
// is running (a value the body causes is queued, never run inside it), and
// nothing is queued or handed over that must go first. The fields are read
// only once the goroutine is known to be the ranging one.
func (a *allObserver[T]) syncReady() bool {
	return curg() == a.m && !a.inBody && !a.stopped && !a.termed && !a.ended &&
		a.head == len(a.queued) && !a.pending.Load()
}

// syncStep makes All's observer the last step of a chain fused by fuseSync
// once syncReady holds (see above). All's observer is not a fuser: fuseOf's
// other callers (a type-changing Map's rxFuse among them) reach it through
// OnNext.
//
//go:noinline // see compose: inlined, its closure calls atomic.Bool.Load
func (a *allObserver[T]) syncStep() func(T) bool {
	if !a.lasting {
		// ctx can end: checked before each body, as OnNext does.
		return func(v T) bool {
			if a.inBody {
				a.OnNext(v) // caused by the body: queued, never run inside it
				return !a.stopped
			}
			return a.run(v)
		}
	}
	yield := a.yield
	return func(v T) bool {
		if a.stopped {
			return false
		}
		if a.inBody {
			a.OnNext(v) // caused by the body: queued, never run inside it
			return true
		}
		a.inBody = true
		ok := yield(v, nil)
		a.inBody = false
		if !ok {
			a.stopped = true
			a.sc.cancel()
			return false
		}
		if len(a.queued) != 0 || a.ended || a.pending.Load() {
			// What the body caused (re-entrant calls through OnNext).
			return a.flush()
		}
		return true
	}
}
