package rx

// Map applies f to each value. A value whose f unsubscribes (from inside f,
// or from another goroutine while f runs) is not forwarded.
func Map[T, U any](src Observable[T], f func(T) U) Observable[U] {
	mustArg(f == nil, "Map", "function f")
	if src == nil {
		return nilSource[U]("Map", "src")
	}
	return observableFunc[U](func(down Observer[U]) Subscription {
		// The stages that call a user function hold a scope even for a
		// plain observer, so that they can see an unsubscription made
		// while that function ran.
		sc := ensureScope(down)
		m := &mapObserver[T, U]{down: direct(down), f: f, sc: sc}
		return subscribe[T](src, m, sc)
	})
}

type mapObserver[T, U any] struct {
	down Observer[U]
	f    func(T) U
	sc   *scope
}

func (m *mapObserver[T, U]) OnNext(v T) {
	u := m.f(v)
	if m.sc.cancelled() {
		return
	}
	m.down.OnNext(u)
}

func (m *mapObserver[T, U]) OnError(err error) { m.down.OnError(err) }
func (m *mapObserver[T, U]) OnCompleted()      { m.down.OnCompleted() }
func (m *mapObserver[T, U]) rxScope() *scope   { return m.sc }

// Filter forwards the values for which keep returns true (and that keep did
// not unsubscribe).
func Filter[T any](src Observable[T], keep func(T) bool) Observable[T] {
	mustArg(keep == nil, "Filter", "function keep")
	if src == nil {
		return nilSource[T]("Filter", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		f := &filterObserver[T]{down: direct(down), keep: keep, sc: sc}
		return subscribe[T](src, f, sc)
	})
}

type filterObserver[T any] struct {
	down Observer[T]
	keep func(T) bool
	sc   *scope
}

func (f *filterObserver[T]) OnNext(v T) {
	if !f.keep(v) || f.sc.cancelled() {
		return
	}
	f.down.OnNext(v)
}

func (f *filterObserver[T]) OnError(err error) { f.down.OnError(err) }
func (f *filterObserver[T]) OnCompleted()      { f.down.OnCompleted() }
func (f *filterObserver[T]) rxScope() *scope   { return f.sc }

// Scan emits the running accumulation of f over the values, starting from seed.
func Scan[T, A any](src Observable[T], seed A, f func(A, T) A) Observable[A] {
	mustArg(f == nil, "Scan", "function f")
	if src == nil {
		return nilSource[A]("Scan", "src")
	}
	return observableFunc[A](func(down Observer[A]) Subscription {
		sc := ensureScope(down)
		s := &scanObserver[T, A]{down: direct(down), acc: seed, f: f, sc: sc}
		return subscribe[T](src, s, sc)
	})
}

type scanObserver[T, A any] struct {
	down Observer[A]
	acc  A
	f    func(A, T) A
	sc   *scope
}

func (s *scanObserver[T, A]) OnNext(v T) {
	s.acc = s.f(s.acc, v)
	if !s.sc.cancelled() {
		s.down.OnNext(s.acc)
	}
}
func (s *scanObserver[T, A]) OnError(err error) { s.down.OnError(err) }
func (s *scanObserver[T, A]) OnCompleted()      { s.down.OnCompleted() }
func (s *scanObserver[T, A]) rxScope() *scope   { return s.sc }

// DistinctUntilChanged drops values equal to the one just before them. A
// value holding a dynamic type == cannot compare (T an interface) fails the
// stream with an *UncomparableError.
func DistinctUntilChanged[T comparable](src Observable[T]) Observable[T] {
	if src == nil {
		return nilSource[T]("DistinctUntilChanged", "src")
	}
	if mayHoldUncomparable[T]() {
		return checkedDistinctUntilChanged(src)
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := scopeOf(down)
		d := &distinctObserver[T]{down: direct(down), sc: sc}
		return subscribe[T](src, d, sc)
	})
}

type distinctObserver[T comparable] struct {
	down Observer[T]
	last T
	seen bool
	sc   *scope
}

func (d *distinctObserver[T]) OnNext(v T) {
	if d.fresh(v) {
		d.down.OnNext(v)
	}
}

// fresh reports whether v differs from the value before it, and remembers it.
func (d *distinctObserver[T]) fresh(v T) bool {
	if d.seen && v == d.last {
		return false
	}
	d.seen, d.last = true, v
	return true
}
func (d *distinctObserver[T]) OnError(err error) { d.down.OnError(err) }
func (d *distinctObserver[T]) OnCompleted()      { d.down.OnCompleted() }
func (d *distinctObserver[T]) rxScope() *scope   { return d.sc }

// Do calls next with each value before forwarding it (unless next
// unsubscribed).
func Do[T any](src Observable[T], next func(T)) Observable[T] {
	mustArg(next == nil, "Do", "function next")
	if src == nil {
		return nilSource[T]("Do", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down) // see Map
		return subscribe[T](src, &doObserver[T]{down: direct(down), next: next, sc: sc}, sc)
	})
}

type doObserver[T any] struct {
	down Observer[T]
	next func(T)
	sc   *scope
}

func (d *doObserver[T]) OnNext(v T) {
	d.next(v)
	if d.sc.cancelled() {
		return
	}
	d.down.OnNext(v)
}

func (d *doObserver[T]) OnError(err error) { d.down.OnError(err) }
func (d *doObserver[T]) OnCompleted()      { d.down.OnCompleted() }
func (d *doObserver[T]) rxScope() *scope   { return d.sc }
