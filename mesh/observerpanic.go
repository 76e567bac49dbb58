package mesh

import "fmt"

// ObserverPanicError ends a subscription whose observer panicked on a
// store's own delivery goroutine (a live frame, a change notice, the
// completion), where no caller of the observer is left to take the panic.
// The store recovers it, logs it with its stack and ends only that
// subscription: the subscriber's OnError receives this error (a resubscribe
// reads the result afresh), and every other subscriber, writer and reader
// goes on. A panic on the subscriber's own goroutine (in Subscribe) goes on
// up to it as it is.
type ObserverPanicError struct {
	Op    string // the subscription, e.g. "query namespace:acme/Docs" or "changes"
	Value any    // what the observer panicked with
}

func (e *ObserverPanicError) Error() string {
	return fmt.Sprintf("mesh: %s: the observer panicked (%v); the subscription is ended", e.Op, e.Value)
}
