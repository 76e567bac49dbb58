package rx

// Operator fusion. A synchronous source (Range, Of, FromSeq, Return, Defer
// of one, a Subject) hands its loop to the stateless stages below it (Map,
// Filter, Do, Skip, Take, TakeWhile, SkipWhile, Scan, DistinctUntilChanged),
// in any number and order: at subscription it asks the observer it was given
// for its per-value function (fuseOf), which that stage composes from its own
// work and the per-value function of the stage below it, down to the first
// observer that is not a stage (the user's, or an operator that holds state
// across goroutines). The source then loops calling that one function. A
// value costs the user's functions and one direct call per stage, with no
// interface call and no hop through OnNext, and no allocation.
//
// Fusion is decided once per subscription and changes no behaviour: the
// source checks the subscription's scope before every value, and each stage
// checks it again after each user function, before the value goes on (a
// function that unsubscribed stops its own value); terminal notifications
// still go through the observers' OnCompleted and OnError. A stage behind an
// operator that does not fuse (a foreign observable, Merge, ...) is reached
// through OnNext as before, with the same checks; the conformance table runs
// every stage both ways (fusion_conformance_test.go).

// fuser is implemented by the observers of the stateless stages. rxFuse
// returns the function a source calls for each value instead of OnNext. It
// returns false when the chain below has ended or unsubscribed (the source
// stops); true says only that the source may go on, after checking the
// scope as it does before every value.
type fuser[T any] interface{ rxFuse() func(T) bool }

// fuseOf returns o's per-value function, or nil when o is not a stage that
// fuses.
func fuseOf[T any](o Observer[T]) func(T) bool {
	if f, ok := o.(fuser[T]); ok {
		return f.rxFuse()
	}
	return nil
}

func (m *mapObserver[T, U]) rxFuse() func(T) bool {
	f, sc, down := m.f, m.sc, m.down
	if next := fuseOf(down); next != nil {
		return func(v T) bool {
			u := f(v)
			return !sc.done.Load() && next(u)
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

func (fo *filterObserver[T]) rxFuse() func(T) bool {
	keep, sc, down := fo.keep, fo.sc, fo.down
	if next := fuseOf(down); next != nil {
		return func(v T) bool {
			if !keep(v) {
				return true
			}
			return !sc.done.Load() && next(v)
		}
	}
	return func(v T) bool {
		if keep(v) && !sc.done.Load() {
			down.OnNext(v)
		}
		return true
	}
}

func (s *scanObserver[T, A]) rxFuse() func(T) bool {
	f, sc, down := s.f, s.sc, s.down
	if next := fuseOf(down); next != nil {
		return func(v T) bool {
			s.acc = f(s.acc, v)
			return !sc.done.Load() && next(s.acc)
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

func (s *skipObserver[T]) rxFuse() func(T) bool {
	next := fuseOf(s.down)
	if next == nil {
		down := s.down
		next = func(v T) bool { down.OnNext(v); return true }
	}
	return func(v T) bool {
		if s.left > 0 {
			s.left--
			return true
		}
		return next(v)
	}
}

func (d *distinctObserver[T]) rxFuse() func(T) bool {
	next := fuseOf(d.down)
	if next == nil {
		down := d.down
		next = func(v T) bool { down.OnNext(v); return true }
	}
	return func(v T) bool {
		if d.seen && v == d.last {
			return true
		}
		d.seen, d.last = true, v
		return next(v)
	}
}

func (s *skipWhileObserver[T]) rxFuse() func(T) bool {
	next := fuseOf(s.down)
	if next == nil {
		down := s.down
		next = func(v T) bool { down.OnNext(v); return true }
	}
	skip, sc := s.skip, s.sc
	return func(v T) bool {
		if !s.passing {
			if skip(v) || sc.done.Load() {
				return true
			}
			s.passing = true
		}
		return next(v)
	}
}

func (t *takeWhileObserver[T]) rxFuse() func(T) bool {
	next := fuseOf(t.down)
	if next == nil {
		down := t.down
		next = func(v T) bool { down.OnNext(v); return true }
	}
	keep, sc := t.keep, t.sc
	return func(v T) bool {
		if t.done {
			return false
		}
		ok := keep(v)
		if sc.done.Load() { // keep unsubscribed: neither the value nor the end
			t.done = true
			return false
		}
		if ok {
			return next(v)
		}
		t.end()
		return false
	}
}

func (t *takeObserver[T]) rxFuse() func(T) bool {
	next := fuseOf(t.down)
	if next == nil {
		down := t.down
		next = func(v T) bool { down.OnNext(v); return true }
	}
	return func(v T) bool {
		if t.left <= 0 {
			return false
		}
		t.left--
		more := next(v)
		if t.left == 0 {
			t.end()
			return false
		}
		return more
	}
}
