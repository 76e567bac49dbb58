package rx

// mustArg panics, at the call that passed it, when a function, clock or
// observer argument is nil: that is a programming error, and reported so
// it names the operator and the argument ("rx.Timeout: nil clock") instead
// of surfacing later as a nil dereference deep inside a delivery, on
// whatever goroutine made it.
func mustArg(isNil bool, op, what string) {
	if isNil {
		panic("rx." + op + ": nil " + what)
	}
}

// mustObserver is mustArg for the observer given to Subscribe.
func mustObserver[T any](o Observer[T], op string) {
	if o == nil {
		panic("rx." + op + ".Subscribe: nil observer")
	}
}
