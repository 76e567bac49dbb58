package rx

// Expand emits every value of src and, recursively, of f applied to every
// value it emits: f(v) is subscribed for each value v, src's and the
// inners' alike (RxJS's expand with its default unlimited concurrency;
// Rx.NET has no Expand). It completes when src and every inner have
// completed; any error ends the stream. Values waiting for f to be applied
// are queued, at most QueueLimit of them (beyond that the stream fails with
// an *OverflowError: the queue is Expand's own work, emptied only by the
// loop that fills it, so no producer waits for room), so an expansion that never ends must be cut by Take
// or by f returning Empty. Synchronous inners are subscribed from a loop,
// not recursively: a deep expansion does not grow the stack. The output is
// serialised as in Merge: one OnNext delivers its own value plus at most 64
// others'.
func Expand[T any](src Observable[T], f func(T) Observable[T]) Observable[T] {
	mustArg(f == nil, "Expand", "function f")
	if src == nil {
		return nilSource[T]("Expand", "src")
	}
	return flattenLimited(src, "Expand", f, 0, func(m *flattener[T, T]) {
		m.echo = m.out.OnNext
		m.feed = m.enqueue
	})
}
