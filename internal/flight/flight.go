// Package flight is the single-flight slot a cache uses to run one fill at a
// time, however many readers ask at once, without letting any reader own it.
//
// A Slot holds at most one Flight. Claim returns the flight in the slot when
// it can serve the caller, and otherwise installs a new one by
// compare-and-swap; the caller that installed it is its owner and runs the
// fill on its own subscription (never a reader's), so a reader that gives up
// does not cancel it. The flight's result is an rx.AsyncSubject: every
// reader, early or late, receives the one outcome. The owner calls Release
// when the fill ends, which frees the slot only if it still holds this
// flight, so a fill that finishes late never evicts its successor; then it
// settles the flight (Resolve or Fail), so a reader arriving next sees the
// slot free and whatever cache the owner updated first.
//
// It is the primitive of auth.PlanTierLadder and of the registry's served
// activation (whose flights carry the derivation's write generation in their
// Meta: a flight of an older generation does not serve a newer reader and is
// replaced; a reader that finds no snapshot claims with ClaimIf, declining
// when a fill for its generation already published and left the slot).
package flight

import (
	"sync/atomic"

	"github.com/meshrx/meshrx/rx"
)

// Flight is one fill in flight. Meta is what the owner records about it when
// it is claimed (when it started, which generation it reads); it is fixed
// once the flight is in the slot.
type Flight[T, M any] struct {
	Meta   M
	result *rx.AsyncSubject[T]
	vacant bool // the mark Release leaves in the slot: no flight
}

// Result is the flight's outcome: one value then completion, or an error.
// Late subscribers receive it too.
func (f *Flight[T, M]) Result() rx.Observable[T] { return f.result }

// Resolve settles the flight with v.
func (f *Flight[T, M]) Resolve(v T) {
	f.result.OnNext(v)
	f.result.OnCompleted()
}

// Fail settles the flight with err.
func (f *Flight[T, M]) Fail(err error) { f.result.OnError(err) }

// Slot holds the flight in progress. The zero value is an empty slot; a Slot
// must not be copied after first use.
type Slot[T, M any] struct {
	cur atomic.Pointer[Flight[T, M]]
}

// Claim returns the flight in the slot if serves(it) reports it can answer
// this caller (a nil serves accepts any flight), with owner false. Otherwise
// it installs a new flight whose Meta is meta(), and returns it with owner
// true and the flight it replaced (nil when the slot was empty): the caller
// must start the fill, and Release and settle the flight when it ends.
func (s *Slot[T, M]) Claim(meta func() M, serves func(*Flight[T, M]) bool) (f, replaced *Flight[T, M], owner bool) {
	return s.ClaimIf(func() (M, bool) { return meta(), true }, serves)
}

// ClaimIf is Claim whose meta may decline to start a fill: it is called
// each time the slot was just seen without a flight that serves the caller,
// so a cache can check there whether a fill that left the slot already
// answered (a fill updates its cache before Release). When meta reports
// false, ClaimIf installs nothing and returns nil flights.
func (s *Slot[T, M]) ClaimIf(meta func() (M, bool), serves func(*Flight[T, M]) bool) (f, replaced *Flight[T, M], owner bool) {
	for {
		cur := s.cur.Load()
		live := cur
		if live != nil && live.vacant {
			live = nil
		}
		if live != nil && (serves == nil || serves(live)) {
			return live, nil, false
		}
		m, ok := meta()
		if !ok {
			return nil, nil, false
		}
		f := &Flight[T, M]{Meta: m, result: rx.NewAsyncSubject[T]()}
		// cur is what meta decided on. A fill claimed and released while
		// meta ran leaves another vacant mark, not the same empty value,
		// so this swap fails and meta is asked again (with an empty value
		// it succeeded: a second fill after one that had just answered).
		if s.cur.CompareAndSwap(cur, f) {
			return f, live, true
		}
	}
}

// Current returns the flight in the slot, or nil.
func (s *Slot[T, M]) Current() *Flight[T, M] {
	if f := s.cur.Load(); f != nil && !f.vacant {
		return f
	}
	return nil
}

// Release frees the slot if it still holds f, and reports whether it did. A
// flight that finishes after a successor was claimed leaves the successor
// in place.
//
// The slot is left with a fresh vacant mark rather than nil, so that a
// claimer that saw the slot empty before this flight was claimed cannot
// mistake it for the same empty slot (see ClaimIf).
func (s *Slot[T, M]) Release(f *Flight[T, M]) bool {
	if f == nil || f.vacant {
		return false
	}
	return s.cur.CompareAndSwap(f, &Flight[T, M]{vacant: true})
}
