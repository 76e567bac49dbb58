package rx

// SelectManyLimit is SelectMany with at most n inners subscribed at once
// (RxJS's mergeMap(f, n); Rx.NET's Select+Merge(n)). An outer value that
// arrives while n inners run waits in order, and its selector is called
// when a slot frees: at most QueueLimit wait (beyond that a producer on
// another goroutine waits for room, and one that must not wait fails the
// stream with an *OverflowError, as in ConcatMap). Values of the inners are merged as they arrive,
// serialised as in SelectMany (one OnNext at this stage delivers its own
// value plus at most 64 others'). It completes when src and every inner
// have completed; any error ends the stream and unsubscribes everything.
// n < 1 fails with an *ArgumentError; n == 1 is ConcatMap.
func SelectManyLimit[T, U any](src Observable[T], f func(T) Observable[U], n int) Observable[U] {
	mustArg(f == nil, "SelectManyLimit", "function f")
	if src == nil {
		return nilSource[U]("SelectManyLimit", "src")
	}
	if n < 1 {
		return fail[U](&ArgumentError{Op: "SelectManyLimit", Arg: "n", Value: n, Reason: "must be positive"})
	}
	return flattenLimited(src, "SelectManyLimit", f, n, nil)
}
