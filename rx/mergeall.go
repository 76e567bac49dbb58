package rx

// MergeAll subscribes to every observable src emits as it arrives and merges
// their values (Rx.NET's Merge over an IObservable<IObservable<T>>, RxJS's
// mergeAll): SelectMany with the identity selector, with its bounds (one
// OnNext at this stage delivers its own value plus at most 64 others').
// It completes when src and every inner have completed; any error ends the
// stream and unsubscribes everything. A nil inner fails the stream. Use
// SelectManyLimit to bound how many inners run at once.
func MergeAll[T any](src Observable[Observable[T]]) Observable[T] {
	if src == nil {
		return nilSource[T]("MergeAll", "src")
	}
	return SelectMany(src, sameObservable[Observable[T]])
}
