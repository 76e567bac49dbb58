package rx

// BufferCount emits the values of src in slices of n, in order; at
// completion the last, shorter slice is emitted if it is not empty. An error
// drops the values held. Each emitted slice is the receiver's to keep.
// n <= 0 fails with an *ArgumentError.
func BufferCount[T any](src Observable[T], n int) Observable[[]T] {
	if src == nil {
		return nilSource[[]T]("BufferCount", "src")
	}
	if n <= 0 {
		return fail[[]T](&ArgumentError{Op: "BufferCount", Arg: "n", Value: n, Reason: "must be positive"})
	}
	return observableFunc[[]T](func(down Observer[[]T]) Subscription {
		sc := ensureScope(down) // it checks for an unsubscription between the notifications it makes at the end
		return subscribe[T](src, &bufferCountObserver[T]{down: direct(down), n: n, sc: sc}, sc)
	})
}

type bufferCountObserver[T any] struct {
	down Observer[[]T]
	n    int
	buf  []T
	sc   *scope
}

func (b *bufferCountObserver[T]) OnNext(v T) {
	if b.buf == nil {
		b.buf = make([]T, 0, min(b.n, 1024))
	}
	b.buf = append(b.buf, v)
	if len(b.buf) == b.n {
		full := b.buf
		b.buf = nil
		b.down.OnNext(full)
	}
}

func (b *bufferCountObserver[T]) OnError(err error) {
	b.buf = nil
	b.down.OnError(err)
}

func (b *bufferCountObserver[T]) OnCompleted() {
	if len(b.buf) > 0 {
		rest := b.buf
		b.buf = nil
		b.down.OnNext(rest)
		if b.sc.cancelled() {
			return
		}
	}
	b.down.OnCompleted()
}

func (b *bufferCountObserver[T]) rxScope() *scope { return b.sc }
