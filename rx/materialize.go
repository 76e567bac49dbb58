package rx

// Materialize turns each notification of src into a value: every value, then
// its error or completion as a last Notification, after which the stream
// completes (Rx.NET's Materialize, RxJS's materialize()). It never fails.
func Materialize[T any](src Observable[T]) Observable[Notification[T]] {
	if src == nil {
		return nilSource[Notification[T]]("Materialize", "src")
	}
	return observableFunc[Notification[T]](func(down Observer[Notification[T]]) Subscription {
		sc := ensureScope(down) // it checks for an unsubscription between the two notifications it makes at the end
		return subscribe[T](src, &materializeObserver[T]{down: direct(down), sc: sc}, sc)
	})
}

type materializeObserver[T any] struct {
	down Observer[Notification[T]]
	sc   *scope
}

func (m *materializeObserver[T]) OnNext(v T) {
	m.down.OnNext(Notification[T]{Kind: OnNextKind, Value: v})
}
func (m *materializeObserver[T]) OnError(err error) {
	if err == nil {
		err = ErrNilError // OnError(nil) is never success
	}
	m.end(Notification[T]{Kind: OnErrorKind, Err: err})
}
func (m *materializeObserver[T]) OnCompleted() { m.end(Notification[T]{Kind: OnCompletedKind}) }
func (m *materializeObserver[T]) end(n Notification[T]) {
	m.down.OnNext(n)
	if !m.sc.cancelled() {
		m.down.OnCompleted()
	}
}
func (m *materializeObserver[T]) rxScope() *scope { return m.sc }

// Dematerialize turns Notifications back into the notifications they stand
// for: an OnErrorKind one fails the stream with its Err (ErrNilError when it
// is nil), an OnCompletedKind one completes it, and src is then unsubscribed
// (Rx.NET's Dematerialize, RxJS's dematerialize()). A notification of an
// unknown kind fails the stream with an *ArgumentError. src's own error or
// completion is forwarded.
func Dematerialize[T any](src Observable[Notification[T]]) Observable[T] {
	if src == nil {
		return nilSource[T]("Dematerialize", "src")
	}
	return observableFunc[T](func(down Observer[T]) Subscription {
		d := &dematerializeObserver[T]{}
		return startVerdict[Notification[T], T](&d.verdict, down, src, d)
	})
}

type dematerializeObserver[T any] struct{ verdict[T] }

func (d *dematerializeObserver[T]) OnNext(n Notification[T]) {
	if d.done {
		return
	}
	switch n.Kind {
	case OnNextKind:
		d.down.OnNext(n.Value)
	case OnErrorKind:
		err := n.Err
		if err == nil {
			err = ErrNilError
		}
		d.fail(err)
	case OnCompletedKind:
		d.complete()
	default:
		d.fail(&ArgumentError{Op: "Dematerialize", Arg: "notification kind", Value: n.Kind, Reason: "is not one of OnNextKind, OnErrorKind, OnCompletedKind"})
	}
}
func (d *dematerializeObserver[T]) OnError(err error) { d.fail(err) }
func (d *dematerializeObserver[T]) OnCompleted()      { d.complete() }
func (d *dematerializeObserver[T]) rxScope() *scope   { return &d.up }
