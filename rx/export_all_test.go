package rx

import "context"

// AllFusedStages ranges with All over the chain build makes over a
// synchronous source that asks for the chain's fused form as Of, Range and
// FromSeq do (fuseSync), and returns how many stages that source could run
// in its own loop, All's step counting as one when it is the chain's last:
// a seam for the test that All fuses, which no observable behaviour shows.
func AllFusedStages(build func(Observable[int]) Observable[int]) int {
	n := -1
	probe := observableFunc[int](func(o Observer[int]) Subscription {
		n = fusedStages(o, syncOut[int])
		o.OnCompleted()
		return noSubscription{}
	})
	for range All(context.Background(), build(probe)) {
	}
	return n
}

// AllLoopsTheBody ranges with All over the chain build makes over a
// synchronous source that asks fuseSync, as Of and Range do, and reports
// whether the fused form it was handed is All's own loop (allLoop: the
// body called from the run's loop, with no step of All's between them).
func AllLoopsTheBody(build func(Observable[int]) Observable[int]) bool {
	direct := false
	probe := observableFunc[int](func(o Observer[int]) Subscription {
		f := fuseSync(o)
		direct = f != nil && f.step == nil && f.loop != nil
		o.OnCompleted()
		return noSubscription{}
	})
	for range All(context.Background(), build(probe)) {
	}
	return direct
}

// AllLoopsWithoutChecks ranges with All under ctx over the chain build
// makes over a synchronous source that asks fuseSync, as Of and Range do,
// and reports whether All's own loop for it runs its chunks without a
// check per value (allLoopOwn: ctx cannot end, every stage has All's
// scope).
func AllLoopsWithoutChecks(ctx context.Context, build func(Observable[int]) Observable[int]) bool {
	own := false
	probe := observableFunc[int](func(o Observer[int]) Subscription {
		ops, down := opsOf(o)
		if a, ok := down.(*allObserver[int]); ok && fuseSync(o).step == nil {
			r := &mfRun[int]{}
			mfFit(ops, r)
			own = a.lasting && r.scopedBy(a.sc)
		}
		o.OnCompleted()
		return noSubscription{}
	})
	for range All(ctx, build(probe)) {
	}
	return own
}
