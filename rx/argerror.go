package rx

import "fmt"

// ArgumentError ends a stream whose operator was given an argument it
// cannot work with, e.g. BufferCount(src, 0). The stream fails at
// subscription, before its source is subscribed.
type ArgumentError struct {
	Op     string // the operator, e.g. "BufferCount"
	Arg    string // the argument, e.g. "n"
	Value  any    // what was passed
	Reason string // what it must be, e.g. "must be positive"
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("rx.%s: %s = %v %s", e.Op, e.Arg, e.Value, e.Reason)
}

// fail returns an observable that fails with err at subscription.
func fail[T any](err error) Observable[T] {
	return observableFunc[T](func(o Observer[T]) Subscription {
		o.OnError(err)
		return noSubscription{}
	})
}
