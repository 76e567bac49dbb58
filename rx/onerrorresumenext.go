package rx

// OnErrorResumeNext subscribes to each source in turn, the next when the
// previous has ended, whether it completed or failed; errors are dropped,
// and the stream completes after the last source (Rx.NET's
// OnErrorResumeNext(params sources), RxJS's onErrorResumeNext). Synchronous
// sources do not grow the stack. A nil source is skipped, as a failing one.
func OnErrorResumeNext[T any](srcs ...Observable[T]) Observable[T] {
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down)
		c := &concatSink[T]{down: direct(down), sc: sc, srcs: srcs, resume: true}
		c.next()
		return sc
	})
}
