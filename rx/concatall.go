package rx

// ConcatAll subscribes to the observables src emits one after the other:
// the next when the previous has completed (Rx.NET's Concat over an
// IObservable<IObservable<T>>, RxJS's concatAll). Observables that arrive
// while one runs wait in order, at most QueueLimit of them: beyond that a
// producer on another goroutine waits for room, and one that must not wait
// fails the stream with an *OverflowError, as in ConcatMap. It completes when src and the last
// inner have completed; any error ends the stream and unsubscribes
// everything. A nil inner fails the stream. The output is serialised as in
// Merge: one OnNext delivers its own value plus at most 64 others'.
func ConcatAll[T any](src Observable[Observable[T]]) Observable[T] {
	if src == nil {
		return nilSource[T]("ConcatAll", "src")
	}
	return flattenLimited(src, "ConcatAll", sameObservable[Observable[T]], 1, nil)
}

func sameObservable[T any](v T) T { return v }
