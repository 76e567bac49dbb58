package rx

import "iter"

// FromSeq emits the values of seq in order and completes, synchronously
// inside Subscribe. Unsubscribing stops the iteration: seq's yield returns
// false at its next value.
//
// FromSeq does not make All's loop body the last step of its fused chain
// (Of and Range do): seq is the caller's code, which may call yield from a
// goroutine of its own or again from inside the body, and All keeps its
// body on the ranging goroutine and never inside itself.
func FromSeq[T any](seq iter.Seq[T]) Observable[T] {
	if seq == nil {
		return fail[T](&ArgumentError{Op: "FromSeq", Arg: "seq", Value: "nil", Reason: "must be an iterator"})
	}
	return observableFunc[T](func(o Observer[T]) Subscription {
		sc := ensureScope(o)
		if sc.cancelled() {
			return sc
		}
		if yield := fuseYield(o, sc); yield != nil {
			seq(yield)
		} else {
			d := direct(o)
			seq(func(v T) bool {
				if sc.cancelled() {
					return false
				}
				d.OnNext(v)
				return !sc.cancelled()
			})
		}
		if !sc.cancelled() {
			o.OnCompleted()
		}
		return sc
	})
}

// fusedYield is FromSeq's yield into a fused chain (see fuse.go): the stages
// below run inside seq's loop. sc is checked before the value and again
// after it, as unfused: seq computes no value past an unsubscription. Out of
// line for the reason given on compose.
//
//go:noinline
func fusedYield[T any](step func(T) bool, sc *scope) func(T) bool {
	return func(v T) bool { return !sc.done.Load() && step(v) && !sc.done.Load() }
}
