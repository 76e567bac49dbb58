package rx

// Operator fusion. A synchronous source (Range, Of, FromSeq, Defer of one,
// a Subject) hands its loop to the stateless stages below it (Map, Filter,
// Do, Skip, Take, TakeWhile, SkipWhile, Scan, DistinctUntilChanged), in any
// number and order. At subscription the source asks the observer it was
// given for the chain's fused form (fuseOf): each stage in turn describes
// itself as an op (its kind, the user's function, a pointer to its state
// and scope) and names the observer below it, until the first observer that
// is not such a stage (the user's, or an operator that holds state across
// goroutines). compose then builds one step function from the ops, from the
// last up: a closure per stage specialised by its kind (a Map and a Filter
// next to each other, or two Maps, make one closure), each calling the
// user's functions and the next closure directly, the last calling the
// observer below. The source's loop calls step for each value (FromSeq from
// inside seq's yield, a Subject from its delivery): a value costs those
// calls and no allocation, with no dispatch over the stages per value; Of
// and Range (in chunks of 64) hand slices to the first closure's loop form
// when the chain starts with Maps and Filters, and make no call per value
// into the chain. A
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
	opDistinct
)

// op is one stage of a fused run over T: its kind, the user's function,
// and pointers to the state the stage's observer holds (the observer may
// be reached through OnNext too, and its OnCompleted reads that state).
type op[T any] struct {
	kind opKind
	sc   *scope // the stage's scope, checked after its user function
	f    func(T) T
	keep func(T) bool // Filter, SkipWhile, TakeWhile
	do   func(T)
	scan func(T, T) T
	acc  *T    // Scan's accumulator
	n    *int  // Skip's count
	pass *bool // SkipWhile is passing values
	tw   *takeWhileObserver[T]
	take *takeObserver[T]
	// DistinctUntilChanged: the last value, whether there is one, and ==
	// (T is comparable there, not here).
	last *T
	seen *bool
	eq   func(a, b T) bool
}

// fused is the fused form of a chain: one run of ops over T, then the run
// of another type that follows a type change (out), or the first observer
// that does not fuse (down).
type fused[T any] struct {
	ops  []op[T]
	out  func(T) bool // nil: down.OnNext
	down Observer[T]
	// step runs one value through the chain. It reports false when the
	// chain has ended or unsubscribed (the source stops); true says only
	// that the source may go on, after checking its scope as it does
	// before every value.
	step func(T) bool
	// loop is run as a function value: the values of a slice through the
	// chain, checking the source's scope (when not nil) before each.
	loop func(vs []T, sc *scope) bool
	// stages is how many stages the chain runs in this type (a type
	// change counts as one): what the fusion tests look at.
	stages int
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
	r := &fused[T]{ops: ops, out: out, down: o, stages: len(ops)}
	if out != nil {
		r.stages++
	}
	r.step, r.loop = r.one, r.run
	return r
}

// compose returns the step and loop (see fused) of ops followed by out, or
// by down.OnNext when out is nil.
func compose[T any](ops []op[T], out func(T) bool, down Observer[T]) (step func(T) bool, loop func([]T, *scope) bool) {
	r := &fused[T]{ops: ops, out: out, down: down}
	return r.one, r.run
}

// one runs v through the chain: step.
func (r *fused[T]) one(v T) bool { return r.each(v, nil) }

// each runs v through the chain after checking sc (when not nil), and
// reports as step does.
func (r *fused[T]) each(v T, sc *scope) bool {
	one := [1]T{v}
	return r.exec(r.ops, one[:], sc)
}

// run runs the values of vs through the chain in order, checking sc (when
// not nil) before each, and reports as step does.
func (r *fused[T]) run(vs []T, sc *scope) bool { return r.exec(r.ops, vs, sc) }

// exec is the fused loop: for each value of vs, every op in turn, then out
// or down. One loop serves every chain of any length and order: a stage
// costs its user function, a predictable branch on its kind and the loads
// of its state and scope, and no call of its own. The checks are those the
// stages make unfused: the source's scope before each value, each stage's
// after its user function (a function that unsubscribed stops its own
// value).
func (r *fused[T]) exec(ops []op[T], vs []T, sc *scope) bool {
	out, down := r.out, r.down
values:
	for _, v := range vs {
		if sc != nil && sc.done.Load() {
			return false
		}
		for i := range ops {
			x := &ops[i]
			switch x.kind {
			case opMap:
				v = x.f(v)
				if x.sc.done.Load() {
					return false
				}
			case opFilter:
				if !x.keep(v) {
					continue values
				}
				if x.sc.done.Load() {
					return false
				}
			case opDo:
				x.do(v)
				if x.sc.done.Load() {
					return false
				}
			case opScan:
				v = x.scan(*x.acc, v)
				*x.acc = v
				if x.sc.done.Load() {
					return false
				}
			case opSkip:
				if *x.n > 0 {
					*x.n--
					continue values
				}
			case opSkipWhile:
				if !*x.pass {
					// Unsubscribed inside skip: dropped, and the source
					// sees the end before the next value.
					if x.keep(v) || x.sc.done.Load() {
						continue values
					}
					*x.pass = true
				}
			case opTakeWhile:
				t := x.tw
				if t.done {
					return false
				}
				ok := x.keep(v)
				if x.sc.done.Load() { // keep unsubscribed: neither the value nor the end
					t.done = true
					return false
				}
				if !ok {
					t.end()
					return false
				}
			case opTake:
				t := x.take
				if t.left <= 0 {
					return false
				}
				t.left--
				if t.left == 0 {
					// The last value: the rest of the chain sees it,
					// then this Take ends (after any Take below it that
					// ended on it too).
					one := [1]T{v}
					r.exec(ops[i+1:], one[:], nil)
					t.end()
					return false
				}
			default: // opDistinct
				if *x.seen && x.eq(v, *x.last) {
					continue values
				}
				*x.seen, *x.last = true, v
			}
		}
		if out == nil {
			down.OnNext(v)
		} else if !out(v) {
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
	return op[T]{kind: opDistinct, last: &d.last, seen: &d.seen, eq: equal[T]}, d.down, true
}

func equal[T comparable](a, b T) bool { return a == b }

func (d *doObserver[T]) rxStage() (op[T], Observer[T], bool) {
	return op[T]{kind: opDo, sc: d.sc, do: d.next}, d.down, true
}
