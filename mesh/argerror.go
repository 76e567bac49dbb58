package mesh

// ArgumentError reports an argument a function or method of this package
// (or of its stores) cannot work with: a nil query, provider, clock,
// context or reader, or a receiver not made by its constructor. It is
// returned, or for a function returning a stream delivered at
// subscription, instead of a panic on a nil dereference.
type ArgumentError struct {
	Func   string // the function, as its package spells it, e.g. "mesh.FanIn", "mesh.(*Router).Route"
	Arg    string // the argument, e.g. "q", "providers[1]", "receiver"
	Reason string // what it must be, e.g. "must not be nil"
}

func (e *ArgumentError) Error() string { return e.Func + ": " + e.Arg + " " + e.Reason }

// nilArg is the *ArgumentError for a nil argument.
func nilArg(fn, arg string) *ArgumentError {
	return &ArgumentError{Func: fn, Arg: arg, Reason: "must not be nil"}
}
