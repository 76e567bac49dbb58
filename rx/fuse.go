package rx

// Operator fusion. A synchronous source (Range, Of, FromSeq, Defer of one,
// a Subject) hands its loop to the stateless stages below it (Map, Filter,
// Do, Skip, Take, TakeWhile, SkipWhile, Scan, DistinctUntilChanged), in any
// number and order. At subscription the source asks the observer it was
// given for the chain's fused form (fuseOf): each stage in turn describes
// itself as an op (its kind, the user's function, a pointer to its state
// and scope) and names the observer below it, until the first observer that
// is not such a stage (the user's, or an operator that holds state across
// goroutines). Of and Range then hand their values to run in slices (Range
// in chunks of 64), FromSeq and a Subject one at a time to push; run
// interprets the ops inside its loop over the values, calling the user's
// functions directly: a value costs those calls and one call into the
// observer at the end, whatever the number of stages, and no allocation. A
// stage that changes the value's type (Map from T to U) ends one fused run
// and starts the next, with one more call. Return delivers its one value
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
	opScan
	opSkip
	opSkipWhile
	opTakeWhile
	opTake
	opStep // a stage with a function of its own (DistinctUntilChanged)
)

// op is one stage of a fused run over T.
type op[T any] struct {
	kind opKind
	sc   *scope // the stage's scope, checked after its user function
	f    func(T) T
	keep func(T) bool // Filter, SkipWhile, TakeWhile; opStep
	scan func(T, T) T
	acc  *T    // Scan's accumulator
	n    *int  // Skip's count
	pass *bool // SkipWhile is passing values
	tw   *takeWhileObserver[T]
	take *takeObserver[T]
}

// runPlain is run for a chain of Maps and Filters only (the common case),
// without the bookkeeping the other kinds need.
func (r *fused[T]) runPlain(vs []T, sc *scope) bool {
	ops, out, down := r.ops, r.out, r.down
values:
	for _, v := range vs {
		if sc != nil && sc.done.Load() {
			return false
		}
		for i := range ops {
			x := &ops[i]
			if x.kind == opMap {
				v = x.f(v)
			} else if !x.keep(v) {
				continue values
			}
			if x.sc.done.Load() {
				return false
			}
		}
		if out != nil {
			if !out(v) {
				return false
			}
			continue
		}
		down.OnNext(v)
	}
	return true
}

// fused is a run of stages over T and what follows it: the fused run of
// the next type (out), or the first observer that does not fuse (down).
type fused[T any] struct {
	ops   []op[T]
	out   func(T) bool
	down  Observer[T]
	plain bool // ops holds only Maps and Filters
}

// fuseOf returns the fused form of the chain that starts at o, or nil when
// o is not a stage that fuses.
func fuseOf[T any](o Observer[T]) *fused[T] {
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
	var out func(T) bool
	if f, ok := o.(fuser[T]); ok {
		out = f.rxFuse()
	}
	if len(ops) == 0 && out == nil {
		return nil
	}
	plain := true
	for _, x := range ops {
		plain = plain && (x.kind == opMap || x.kind == opFilter)
	}
	return &fused[T]{ops: ops, out: out, down: o, plain: plain}
}

// push runs v through the chain. It returns false when the chain has ended
// or unsubscribed (the source stops); true says only that the source may go
// on, after checking the scope as it does before every value.
func (r *fused[T]) push(v T) bool {
	one := [1]T{v}
	if r.plain {
		return r.runPlain(one[:], nil)
	}
	return r.run(one[:], nil)
}

// run runs the values of vs through the chain in order, checking sc (when
// not nil) before each, and reports as push does. The ops are interpreted
// inside the loop over the values, so that a synchronous source that hands
// over a slice (Of, Range in chunks) calls the user's functions from this
// one loop, with no call per stage.
func (r *fused[T]) run(vs []T, sc *scope) bool {
	ops, out, down := r.ops, r.out, r.down
	if r.plain {
		return r.runPlain(vs, sc)
	}
	if len(ops) > 64 { // more Takes than ends can mark: one value at a time
		for _, v := range vs {
			if sc.cancelled() {
				return false
			}
			one := [1]T{v}
			if !r.run(one[:], nil) {
				return false
			}
		}
		return true
	}
	for _, v := range vs {
		if sc != nil && sc.done.Load() {
			return false
		}
		// ends marks the Takes that reached their count with this value:
		// they end once the rest of the chain has seen it, the lowest
		// (furthest upstream) last.
		var ends uint64
		more, deliver := true, true
	stages:
		for i := range ops {
			// Map and Filter, the most common, are tested first.
			x := &ops[i]
			if x.kind == opMap {
				v = x.f(v)
				if x.sc.done.Load() {
					more, deliver = false, false
					break
				}
				continue
			}
			if x.kind == opFilter {
				if !x.keep(v) {
					deliver = false
					break
				}
				if x.sc.done.Load() {
					more, deliver = false, false
					break
				}
				continue
			}
			switch x.kind {
			case opScan:
				v = x.scan(*x.acc, v)
				*x.acc = v
				if x.sc.done.Load() {
					more, deliver = false, false
					break stages
				}
			case opSkip:
				if *x.n > 0 {
					*x.n--
					deliver = false
					break stages
				}
			case opSkipWhile:
				if !*x.pass {
					if x.keep(v) || x.sc.done.Load() {
						deliver = false
						break stages
					}
					*x.pass = true
				}
			case opTakeWhile:
				t := x.tw
				if t.done {
					more, deliver = false, false
					break stages
				}
				ok := x.keep(v)
				if x.sc.done.Load() { // keep unsubscribed: neither the value nor the end
					t.done = true
					more, deliver = false, false
					break stages
				}
				if !ok {
					t.end()
					more, deliver = false, false
					break stages
				}
			case opTake:
				t := x.take
				if t.left <= 0 {
					more, deliver = false, false
					break stages
				}
				t.left--
				if t.left == 0 {
					ends |= 1 << i
				}
			case opStep:
				if !x.keep(v) {
					deliver = false
					break stages
				}
			}
		}
		if deliver {
			if out != nil {
				more = out(v)
			} else {
				down.OnNext(v)
			}
		}
		if ends != 0 {
			for i := len(ops) - 1; i >= 0; i-- {
				if ends&(1<<i) != 0 {
					ops[i].take.end()
				}
			}
			return false
		}
		if !more {
			return false
		}
	}
	return true
}

func (m *mapObserver[T, U]) rxStage() (op[T], Observer[T], bool) {
	f, ok := any(m.f).(func(T) T)
	if !ok {
		return op[T]{}, nil, false
	}
	return op[T]{kind: opMap, sc: m.sc, f: f}, any(m.down).(Observer[T]), true
}

func (m *mapObserver[T, U]) rxFuse() func(T) bool {
	f, sc, down := m.f, m.sc, m.down
	if next := fuseOf(down); next != nil {
		return func(v T) bool {
			u := f(v)
			return !sc.done.Load() && next.push(u)
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

func (s *scanObserver[T, A]) rxFuse() func(T) bool {
	f, sc, down := s.f, s.sc, s.down
	if next := fuseOf(down); next != nil {
		return func(v T) bool {
			s.acc = f(s.acc, v)
			return !sc.done.Load() && next.push(s.acc)
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
	return op[T]{kind: opStep, keep: d.fresh}, d.down, true
}
