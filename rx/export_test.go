package rx

import "fmt"

// Seams for the fusion tests (fusion_test.go): they look at what a source
// is handed, which no observable behaviour shows.

// FusedStages subscribes the chain build makes over a synchronous source and
// returns how many stages that source could run in its own loop: 0 when the
// observer it was handed does not fuse.
func FusedStages(build func(Observable[int]) Observable[int]) int {
	n := -1
	probe := observableFunc[int](func(o Observer[int]) Subscription {
		n = fusedStages(o, fuserOut[int])
		o.OnCompleted()
		return noSubscription{}
	})
	build(probe).Subscribe(NewObserver[int](nil, nil, nil))
	return n
}

// fusedStages returns how many stages the fused form of the chain at o
// runs in its type, the step after them (out: fuserOut for fuseOf, syncOut
// for fuseSync) counting as one when there is one; 0 when it does not fuse.
func fusedStages(o Observer[int], out func(Observer[int]) func(int) bool) int {
	ops, down := opsOf(o)
	next := out(down)
	if fuseOps(ops, next, down) == nil {
		return 0
	}
	if next != nil {
		return len(ops) + 1
	}
	return len(ops)
}

// SubjectFuses reports whether s delivers to one of its current subscribers
// through a fused chain rather than OnNext.
func SubjectFuses[T any](s *Subject[T]) bool {
	if cur := s.list.Load(); cur != nil {
		for _, sub := range *cur {
			if sub.step != nil {
				return true
			}
		}
	}
	return false
}

// FusedRuns subscribes the chain build makes over a synchronous source and
// returns how compose cuts the stages that source is handed into runs, as
// "kind n" per run (one, pair, mf, st: see cut in fuse.go).
func FusedRuns(build func(Observable[int]) Observable[int]) []string {
	var runs []string
	probe := observableFunc[int](func(o Observer[int]) Subscription {
		ops, _ := opsOf(o)
		for _, sp := range cut(ops, nil) {
			runs = append(runs, fmt.Sprintf("%s %d", [...]string{"one", "pair", "mf", "st"}[sp.kind], sp.n))
		}
		o.OnCompleted()
		return noSubscription{}
	})
	build(probe).Subscribe(NewObserver[int](nil, nil, nil))
	return runs
}
