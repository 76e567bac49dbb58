package rx

// Operator fusion. A synchronous source that owns its loop (Range) hands the
// whole loop to the first stage below it when that stage can run it
// (rangeLooper), and the stage calls the user's functions directly, fusing
// the stage below it too where it knows it (Map followed by Filter). A value
// then costs the calls of the user's functions and one call into the rest
// of the chain, with no hop per stage. Fusion is decided once, at
// subscription; it changes no behaviour: the scope is still checked before
// every value.

// rangeLooper is implemented by stages that can run Range's loop over
// [start, end) themselves. rxRange returns false when sc was cancelled.
type rangeLooper interface {
	rxRange(start, end int, sc *scope) bool
}

func (m *mapObserver[T, U]) rxRange(start, end int, sc *scope) bool {
	// m observes a Range, so T is int.
	f := any(m.f).(func(int) U)
	if d, ok := m.down.(*filterObserver[U]); ok {
		keep := d.keep
		if next := d.next; next != nil {
			if sc == nil {
				for v := start; v < end; v++ {
					if u := f(v); keep(u) {
						next(u)
					}
				}
				return true
			}
			for v := start; v < end; v++ {
				if sc.done.Load() {
					return false
				}
				// Checked again before the value goes on: a user
				// function that unsubscribed stops its own value too.
				if u := f(v); keep(u) && !sc.done.Load() {
					next(u)
				}
			}
			return true
		}
		down := d.down
		if sc == nil {
			for v := start; v < end; v++ {
				if u := f(v); keep(u) {
					down.OnNext(u)
				}
			}
			return true
		}
		for v := start; v < end; v++ {
			if sc.done.Load() {
				return false
			}
			if u := f(v); keep(u) && !sc.done.Load() {
				down.OnNext(u)
			}
		}
		return true
	}
	if next := m.next; next != nil {
		for v := start; v < end; v++ {
			if sc.cancelled() {
				return false
			}
			if u := f(v); !sc.cancelled() {
				next(u)
			}
		}
		return true
	}
	down := m.down
	for v := start; v < end; v++ {
		if sc.cancelled() {
			return false
		}
		if u := f(v); !sc.cancelled() {
			down.OnNext(u)
		}
	}
	return true
}

func (fo *filterObserver[T]) rxRange(start, end int, sc *scope) bool {
	// fo observes a Range, so T is int.
	keep := any(fo.keep).(func(int) bool)
	if next := any(fo.next).(func(int)); next != nil {
		for v := start; v < end; v++ {
			if sc.cancelled() {
				return false
			}
			if keep(v) && !sc.cancelled() {
				next(v)
			}
		}
		return true
	}
	down := any(fo.down).(Observer[int])
	for v := start; v < end; v++ {
		if sc.cancelled() {
			return false
		}
		if keep(v) && !sc.cancelled() {
			down.OnNext(v)
		}
	}
	return true
}
