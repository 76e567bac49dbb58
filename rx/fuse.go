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
	// build makes an opStep stage's closure, calling next (or down.OnNext
	// when next is nil) itself.
	build func(next func(T) bool, down Observer[T]) func(T) bool
}

// fused is the fused form of a chain: step runs one value through every
// stage of the run and the runs of other types that follow it, down to the
// first observer that does not fuse.
type fused[T any] struct {
	// step reports false when the chain has ended or unsubscribed (the
	// source stops); true says only that the source may go on, after
	// checking its scope as it does before every value.
	step func(T) bool
	// loop, when not nil, runs the values of a slice through the chain,
	// checking the source's scope (when not nil) before each, and reports
	// as step does: the first closure's work spelled out as a loop, for a
	// chain that starts with Maps and Filters, so that a source holding its
	// values in a slice (Of, Range in chunks) makes no call per value into
	// the chain.
	loop func(vs []T, sc *scope) bool
	// stages is how many stages step runs in this type (a type change
	// counts as one): what the fusion tests look at.
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
	n := len(ops)
	if out != nil {
		n++
	}
	step, loop := compose(ops, out, o)
	return &fused[T]{step: step, loop: loop, stages: n}
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
// compose builds the chain's step at subscription, from the last stage up:
// one closure per stage (a Map followed by a Filter, a Filter followed by a
// Map and two Maps make one closure between them), each specialised by its
// kind and calling the next directly, the last calling down.OnNext (or the
// next type's step, out) itself. A value thus costs the user's functions, a
// call per closure and the scope loads, with no dispatch over the stages.
// loop is the first closure's loop form (see fused), or nil.
func compose[T any](ops []op[T], out func(T) bool, down Observer[T]) (step func(T) bool, loop func([]T, *scope) bool) {
	next := out // nil: the last closure calls down.OnNext
	for i := len(ops) - 1; i >= 0; {
		if i == 0 || i == 1 {
			// The first closure: its loop form too.
			loop = headLoop(ops[:i+1], next, down)
		}
		if i >= 1 {
			a, b := &ops[i-1], &ops[i]
			switch {
			case a.kind == opMap && b.kind == opFilter:
				next = mapFilter(a.f, a.sc, b.keep, b.sc, next, down)
				i -= 2
				continue
			case a.kind == opFilter && b.kind == opMap:
				next = filterMap(a.keep, a.sc, b.f, b.sc, next, down)
				i -= 2
				continue
			case a.kind == opMap && b.kind == opMap:
				next = mapMap(a.f, a.sc, b.f, b.sc, next, down)
				i -= 2
				continue
			}
		}
		next = single(&ops[i], next, down)
		i--
	}
	return next, loop
}

// headLoop returns the loop form of the first closure when it is made of
// the stages in g (a Map and a Filter in either order, two Maps, or one of
// them), which calls next (or down.OnNext when next is nil); nil for the
// other kinds. It does per value what the closure does.
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
	return op[T]{kind: opStep, build: d.step}, d.down, true
}

// step compares with == in the closure itself (T is comparable here, not
// in the fused run).
//
//go:noinline // see compose
func (d *distinctObserver[T]) step(next func(T) bool, down Observer[T]) func(T) bool {
	if next == nil {
		return func(v T) bool {
			if d.seen && v == d.last {
				return true
			}
			d.seen, d.last = true, v
			down.OnNext(v)
			return true
		}
	}
	return func(v T) bool {
		if d.seen && v == d.last {
			return true
		}
		d.seen, d.last = true, v
		return next(v)
	}
}

func (d *doObserver[T]) rxStage() (op[T], Observer[T], bool) {
	return op[T]{kind: opDo, sc: d.sc, do: d.next}, d.down, true
}
