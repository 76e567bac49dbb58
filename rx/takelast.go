package rx

// TakeLast forwards the last n values of src when it completes, then
// completes; an error is passed on and the held values are dropped. It holds
// at most n values (a ring, grown only as values arrive). n <= 0 forwards
// nothing but the completion.
func TakeLast[T any](src Observable[T], n int) Observable[T] {
	if src == nil {
		return nilSource[T]("TakeLast", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		sc := ensureScope(down) // it checks for an unsubscription between the notifications it makes at the end
		return subscribe[T](src, &takeLastObserver[T]{down: direct(down), n: n, sc: sc}, sc)
	})
}

type takeLastObserver[T any] struct {
	down Observer[T]
	n    int
	ring []T
	head int // index of the oldest value once the ring is full
	sc   *scope
}

func (t *takeLastObserver[T]) OnNext(v T) {
	if t.n <= 0 {
		return
	}
	if len(t.ring) < t.n {
		t.ring = append(t.ring, v)
		return
	}
	t.ring[t.head] = v
	t.head = (t.head + 1) % t.n
}

func (t *takeLastObserver[T]) OnError(err error) {
	t.ring = nil
	t.down.OnError(err)
}

func (t *takeLastObserver[T]) OnCompleted() {
	ring, head := t.ring, t.head
	t.ring = nil
	for i := range ring {
		if t.sc.cancelled() {
			return
		}
		t.down.OnNext(ring[(head+i)%len(ring)])
	}
	if !t.sc.cancelled() {
		t.down.OnCompleted()
	}
}

func (t *takeLastObserver[T]) rxScope() *scope { return t.sc }
