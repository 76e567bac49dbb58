package rx

// All's part in fusion. A source whose loop runs inside its Subscribe, on
// the goroutine that called it, and calls the fused step nowhere else (Of,
// Range; Defer's inner source through it; not FromSeq, whose seq may call
// yield from anywhere) asks for the chain's
// fused form with fuseSync instead of fuseOf. When that chain of stateless
// stages ends at All's observer and the call is made on the ranging
// goroutine with nothing queued and no body running, All's observer becomes
// the chain's last step (rxFuse): the last stage's closure calls it
// directly, and it runs the loop body with no goroutine-identity read and no
// interface call. Everywhere else (a Subject, which calls the step from
// whichever goroutine delivers; a source subscribed from another goroutine,
// by Concat after a goroutine source, say; a type-changing Map, through
// which fuseSync does not look) All's observer does not fuse (rxFuse
// returns nil, which fuseOf takes as "call OnNext"), and its OnNext tells
// the ranging goroutine from the others as before.

// fuseSync is fuseOf for a source that calls the step it returns only
// inside its own Subscribe, on the goroutine that called Subscribe.
func fuseSync[T any](o Observer[T]) *fused[T] {
	a := allBelow(o)
	if a == nil || !a.syncReady() {
		return fuseOf(o)
	}
	a.syncFuse = true
	r := fuseOf(o)
	a.syncFuse = false
	return r
}

// allBelow returns All's observer when o is it, or a chain of stages over T
// (and forwards) that fuses down to it; nil otherwise.
func allBelow[T any](o Observer[T]) *allObserver[T] {
	for {
		switch x := o.(type) {
		case *allObserver[T]:
			return x
		case *forward[T]:
			o = x.down
		case stage[T]:
			_, down, ok := x.rxStage()
			if !ok {
				return nil
			}
			o = down
		default:
			return nil
		}
	}
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

// rxFuse makes All's observer the last step of a chain fused by fuseSync
// (see above); nil, for fuseOf's other callers, says it does not fuse.
func (a *allObserver[T]) rxFuse() func(T) bool {
	if curg() != a.m || !a.syncFuse {
		return nil
	}
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
