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

// nilSource is the stream an operator returns for a nil source (arg names
// it): it fails with an *ArgumentError at subscription, so the mistake
// reaches whoever consumes the stream as an error, not as a nil
// dereference inside a delivery.
func nilSource[T any](op, arg string) Observable[T] {
	return fail[T](&ArgumentError{Op: op, Arg: arg, Value: nil, Reason: "must be an observable"})
}

// nilAt returns the index of the first nil among srcs, or -1.
func nilAt[T any](srcs []Observable[T]) int {
	for i, s := range srcs {
		if s == nil {
			return i
		}
	}
	return -1
}

// indexArg names element i of the list argument arg.
func indexArg(arg string, i int) string { return fmt.Sprintf("%s[%d]", arg, i) }
