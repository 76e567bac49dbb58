package rx_test

import (
	"context"
	"errors"
	"go/ast"
	"sort"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/rx"
)

// nilSourceCalls lists, for every exported function of package rx that
// takes an observable, one call per observable parameter passing nil there
// (a list of sources gets a nil as its second element) and usable values
// elsewhere, returning the error the caller sees. The functions are never
// called: the stream fails at subscription.
var nilSourceCalls = map[string][]func() error{
	"All": {
		func() error {
			for _, err := range rx.All[int](context.Background(), nil) {
				return err
			}
			return nil
		},
	},
	"Average": {
		func() error { return errOf(rx.Average[int](nil)) },
	},
	"BufferCount": {
		func() error { return errOf(rx.BufferCount[int](nil, *new(int))) },
	},
	"BufferTime": {
		func() error { return errOf(rx.BufferTime[int](nil, *new(time.Duration), clock.NewMock())) },
	},
	"Catch": {
		func() error { return errOf(rx.Catch[int](nil, func(error) rx.Observable[int] { panic("not called") })) },
	},
	"Collect": {
		func() error { _, err := rx.Collect[int](context.Background(), nil); return err },
	},
	"CombineLatest": {
		func() error { return errOf(rx.CombineLatest[int](rx.Never[int](), nil)) },
	},
	"CombineLatest2": {
		func() error {
			return errOf(rx.CombineLatest2[int, int, int](nil, rx.Never[int](), func(int, int) int { panic("not called") }))
		},
		func() error {
			return errOf(rx.CombineLatest2[int, int, int](rx.Never[int](), nil, func(int, int) int { panic("not called") }))
		},
	},
	"Concat": {
		func() error { return errOf(rx.Concat[int](rx.Never[int](), nil)) },
	},
	"ConcatAll": {
		func() error { return errOf(rx.ConcatAll[int](nil)) },
	},
	"ConcatMap": {
		func() error {
			return errOf(rx.ConcatMap[int, int](nil, func(int) rx.Observable[int] { panic("not called") }))
		},
	},
	"Contains": {
		func() error { return errOf(rx.Contains[int](nil, *new(int))) },
	},
	"Count": {
		func() error { return errOf(rx.Count[int](nil)) },
	},
	"Debounce": {
		func() error { return errOf(rx.Debounce[int](nil, *new(time.Duration), clock.NewMock())) },
	},
	"DefaultIfEmpty": {
		func() error { return errOf(rx.DefaultIfEmpty[int](nil, *new(int))) },
	},
	"Delay": {
		func() error { return errOf(rx.Delay[int](nil, *new(time.Duration), clock.NewMock())) },
	},
	"DelaySubscription": {
		func() error { return errOf(rx.DelaySubscription[int](nil, *new(time.Duration), clock.NewMock())) },
	},
	"Dematerialize": {
		func() error { return errOf(rx.Dematerialize[int](nil)) },
	},
	"Distinct": {
		func() error { return errOf(rx.Distinct[int](nil)) },
	},
	"DistinctBy": {
		func() error { return errOf(rx.DistinctBy[int, int](nil, func(int) int { panic("not called") })) },
	},
	"DistinctUntilChanged": {
		func() error { return errOf(rx.DistinctUntilChanged[int](nil)) },
	},
	"Do": {
		func() error { return errOf(rx.Do[int](nil, func(int) { panic("not called") })) },
	},
	"ElementAt": {
		func() error { return errOf(rx.ElementAt[int](nil, *new(int))) },
	},
	"Every": {
		func() error { return errOf(rx.Every[int](nil, func(int) bool { panic("not called") })) },
	},
	"ExhaustMap": {
		func() error {
			return errOf(rx.ExhaustMap[int, int](nil, func(int) rx.Observable[int] { panic("not called") }))
		},
	},
	"Expand": {
		func() error { return errOf(rx.Expand[int](nil, func(int) rx.Observable[int] { panic("not called") })) },
	},
	"Filter": {
		func() error { return errOf(rx.Filter[int](nil, func(int) bool { panic("not called") })) },
	},
	"Finally": {
		func() error { return errOf(rx.Finally[int](nil, func() { panic("not called") })) },
	},
	"Find": {
		func() error { return errOf(rx.Find[int](nil, func(int) bool { panic("not called") })) },
	},
	"First": {
		func() error { _, err := rx.First[int](context.Background(), nil); return err },
	},
	"ForkJoin": {
		func() error { return errOf(rx.ForkJoin[int](rx.Never[int](), nil)) },
	},
	"GroupBy": {
		func() error { return errOf(rx.GroupBy[int, int](nil, func(int) int { panic("not called") })) },
	},
	"IgnoreElements": {
		func() error { return errOf(rx.IgnoreElements[int](nil)) },
	},
	"IsEmpty": {
		func() error { return errOf(rx.IsEmpty[int](nil)) },
	},
	"Last": {
		func() error { return errOf(rx.Last[int](nil)) },
	},
	"Map": {
		func() error { return errOf(rx.Map[int, int](nil, func(int) int { panic("not called") })) },
	},
	"Materialize": {
		func() error { return errOf(rx.Materialize[int](nil)) },
	},
	"Max": {
		func() error { return errOf(rx.Max[int](nil)) },
	},
	"Merge": {
		func() error { return errOf(rx.Merge[int](rx.Never[int](), nil)) },
	},
	"MergeAll": {
		func() error { return errOf(rx.MergeAll[int](nil)) },
	},
	"Min": {
		func() error { return errOf(rx.Min[int](nil)) },
	},
	"OnErrorResumeNext": {
		func() error { return errOf(rx.OnErrorResumeNext[int](rx.Empty[int](), nil)) },
	},
	"OnErrorReturn": {
		func() error { return errOf(rx.OnErrorReturn[int](nil, *new(int))) },
	},
	"Pairwise": {
		func() error { return errOf(rx.Pairwise[int](nil)) },
	},
	"Race": {
		func() error { return errOf(rx.Race[int](rx.Never[int](), nil)) },
	},
	"Reduce": {
		func() error {
			return errOf(rx.Reduce[int, int](nil, *new(int), func(int, int) int { panic("not called") }))
		},
	},
	"Repeat": {
		func() error { return errOf(rx.Repeat[int](nil, *new(int))) },
	},
	"Retry": {
		func() error { return errOf(rx.Retry[int](nil, *new(int))) },
	},
	"RetryBackoff": {
		func() error {
			return errOf(rx.RetryBackoff[int](nil, *new(int), *new(time.Duration), *new(time.Duration), clock.NewMock()))
		},
	},
	"RetryWhen": {
		func() error {
			return errOf(rx.RetryWhen[int, int](nil, func(errs rx.Observable[error]) rx.Observable[int] { panic("not called") }))
		},
	},
	"Sample": {
		func() error { return errOf(rx.Sample[int](nil, *new(time.Duration), clock.NewMock())) },
	},
	"Scan": {
		func() error {
			return errOf(rx.Scan[int, int](nil, *new(int), func(int, int) int { panic("not called") }))
		},
	},
	"SelectMany": {
		func() error {
			return errOf(rx.SelectMany[int, int](nil, func(int) rx.Observable[int] { panic("not called") }))
		},
	},
	"SelectManyLimit": {
		func() error {
			return errOf(rx.SelectManyLimit[int, int](nil, func(int) rx.Observable[int] { panic("not called") }, *new(int)))
		},
	},
	"SequenceEqual": {
		func() error { return errOf(rx.SequenceEqual[int](nil, rx.Never[int]())) },
		func() error { return errOf(rx.SequenceEqual[int](rx.Never[int](), nil)) },
	},
	"Share": {
		func() error { return errOf(rx.Share[int](nil)) },
	},
	"ShareReplay": {
		func() error { return errOf(rx.ShareReplay[int](nil, *new(int))) },
	},
	"Single": {
		func() error { return errOf(rx.Single[int](nil)) },
	},
	"Skip": {
		func() error { return errOf(rx.Skip[int](nil, *new(int))) },
	},
	"SkipLast": {
		func() error { return errOf(rx.SkipLast[int](nil, *new(int))) },
	},
	"SkipUntil": {
		func() error { return errOf(rx.SkipUntil[int, int](nil, rx.Never[int]())) },
		func() error { return errOf(rx.SkipUntil[int, int](rx.Never[int](), nil)) },
	},
	"SkipWhile": {
		func() error { return errOf(rx.SkipWhile[int](nil, func(int) bool { panic("not called") })) },
	},
	"StartWith": {
		func() error { return errOf(rx.StartWith[int](nil)) },
	},
	"Sum": {
		func() error { return errOf(rx.Sum[int](nil)) },
	},
	"Switch": {
		func() error { return errOf(rx.Switch[int](nil)) },
	},
	"SwitchMap": {
		func() error {
			return errOf(rx.SwitchMap[int, int](nil, func(int) rx.Observable[int] { panic("not called") }))
		},
	},
	"Take": {
		func() error { return errOf(rx.Take[int](nil, *new(int))) },
	},
	"TakeLast": {
		func() error { return errOf(rx.TakeLast[int](nil, *new(int))) },
	},
	"TakeUntil": {
		func() error { return errOf(rx.TakeUntil[int, int](nil, rx.Never[int]())) },
		func() error { return errOf(rx.TakeUntil[int, int](rx.Never[int](), nil)) },
	},
	"TakeWhile": {
		func() error { return errOf(rx.TakeWhile[int](nil, func(int) bool { panic("not called") })) },
	},
	"Throttle": {
		func() error { return errOf(rx.Throttle[int](nil, *new(time.Duration), clock.NewMock())) },
	},
	"ThrowIfEmpty": {
		func() error { return errOf(rx.ThrowIfEmpty[int](nil, func() error { panic("not called") })) },
	},
	"TimeInterval": {
		func() error { return errOf(rx.TimeInterval[int](nil, clock.NewMock())) },
	},
	"Timeout": {
		func() error { return errOf(rx.Timeout[int](nil, *new(time.Duration), clock.NewMock())) },
	},
	"TimeoutStage": {
		func() error {
			return errOf(rx.TimeoutStage[int](nil, *new(string), *new(time.Duration), clock.NewMock()))
		},
	},
	"Timestamp": {
		func() error { return errOf(rx.Timestamp[int](nil, clock.NewMock())) },
	},
	"ToChannel": {
		func() error {
			for n := range rx.ToChannel[int](context.Background(), nil, 1) {
				return n.Err
			}
			return nil
		},
	},
	"ToMap": {
		func() error { return errOf(rx.ToMap[int, int, int](nil, func(int) (int, int) { panic("not called") })) },
	},
	"Window": {
		func() error { return errOf(rx.Window[int, int](nil, rx.Never[int]())) },
		func() error { return errOf(rx.Window[int, int](rx.Never[int](), nil)) },
	},
	"WindowCount": {
		func() error { return errOf(rx.WindowCount[int](nil, *new(int))) },
	},
	"WindowTime": {
		func() error { return errOf(rx.WindowTime[int](nil, *new(time.Duration), clock.NewMock())) },
	},
	"WithLatestFrom": {
		func() error {
			return errOf(rx.WithLatestFrom[int, int, int](nil, rx.Never[int](), func(int, int) int { panic("not called") }))
		},
		func() error {
			return errOf(rx.WithLatestFrom[int, int, int](rx.Never[int](), nil, func(int, int) int { panic("not called") }))
		},
	},
	"Zip": {
		func() error { return errOf(rx.Zip[int](rx.Never[int](), nil)) },
	},
	"Zip2": {
		func() error {
			return errOf(rx.Zip2[int, int, int](nil, rx.Never[int](), func(int, int) int { panic("not called") }))
		},
		func() error {
			return errOf(rx.Zip2[int, int, int](rx.Never[int](), nil, func(int, int) int { panic("not called") }))
		},
	},
}

// nilSourceSkipped names the functions whose documented answer to a nil
// source is not an error, and why.
var nilSourceSkipped = map[string]string{
	"OnErrorResumeNext": "skips a nil source as it skips a failing one (documented)",
}

// errOf subscribes src and returns the error it ends with, nil if it
// completes; a source failing at subscription answers at once.
func errOf[T any](src rx.Observable[T]) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, err := range rx.All(ctx, src) {
		if err != nil {
			return err
		}
	}
	return nil
}

// A nil source is a mistake the caller can make with data (a map lookup
// that found nothing): it gets an *ArgumentError naming the function and
// the argument through the stream, as FromSeq(nil) does, rather than a nil
// dereference inside a delivery on whatever goroutine made it, and the
// table names every function that takes an observable.
//
// Negative control, run by hand: without Map's check, its row failed with
// "Map: call 0: panicked with runtime error: invalid memory address or nil
// pointer dereference" (at subscription).
func TestEveryFunctionTakingAnObservableFailsANilOneWithAnArgumentError(t *testing.T) {
	for name, calls := range nilSourceCalls {
		for i, call := range calls {
			var err error
			if p := recovered(func() { err = call() }); p != nil {
				t.Errorf("%s: call %d: panicked with %v", name, i, p)
				continue
			}
			if why, ok := nilSourceSkipped[name]; ok {
				if err != nil {
					t.Errorf("%s: call %d: got %v; it %s", name, i, err, why)
				}
				continue
			}
			var ae *rx.ArgumentError
			if !errors.As(err, &ae) || ae.Op != name || ae.Reason != "must be an observable" {
				t.Errorf("%s: call %d: got %v, want an *rx.ArgumentError for %s's nil source", name, i, err, name)
			}
		}
	}
	var missing, miscounted []string
	for _, fd := range exportedFuncs(t) {
		n := 0
		for _, p := range fd.Type.Params.List {
			if takesObservable(p.Type) {
				n += len(p.Names)
			}
		}
		calls, listed := nilSourceCalls[fd.Name.Name]
		switch {
		case n == 0 && listed:
			miscounted = append(miscounted, fd.Name.Name+" (takes no observable)")
		case n > 0 && !listed:
			missing = append(missing, fd.Name.Name)
		case n != len(calls):
			miscounted = append(miscounted, fd.Name.Name)
		}
	}
	sort.Strings(missing)
	sort.Strings(miscounted)
	if len(missing) > 0 {
		t.Errorf("functions taking an observable without a nil-source entry: %v", missing)
	}
	if len(miscounted) > 0 {
		t.Errorf("entries whose calls are not one per observable parameter: %v", miscounted)
	}
	if len(nilSourceCalls) < 50 {
		t.Errorf("only %d entries: is the test reading package rx?", len(nilSourceCalls))
	}
}

// takesObservable reports whether a parameter's type is Observable[...], a
// slice of them or a variadic list of them.
func takesObservable(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.IndexExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "Observable"
	case *ast.Ellipsis:
		return takesObservable(x.Elt)
	case *ast.ArrayType:
		return takesObservable(x.Elt)
	}
	return false
}
