package auth

import (
	"fmt"
	"runtime/debug"
)

// PanicError reports a panic out of code the caller supplied (a store's
// read, a Logger's handler) while auth ran it on its own behalf, such as a
// FoldSource's read of the security nodes. The panic is the answer's error
// instead of the end of the process: the decision it was for is
// Undetermined (a panic never grants), the value stays usable, and the
// next read runs the code again.
type PanicError struct {
	Stage string // what auth was running, e.g. "reading the security nodes"
	Value any    // the value the code panicked with
	Stack []byte // the panicking goroutine's stack, from where it panicked
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("auth: %s panicked: %v", e.Stage, e.Value)
}

// Unwrap returns the panic's value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recovered turns a recovered panic value into a *PanicError for stage,
// and nil into nil. Call it in the deferred function that recovers, so the
// stack is still the panicking one.
func recovered(stage string, p any) error {
	if p == nil {
		return nil
	}
	return &PanicError{Stage: stage, Value: p, Stack: debug.Stack()}
}

// guard runs f, turning a panic out of it into a *PanicError for stage.
func guard(stage string, f func()) (err error) {
	defer func() { err = recovered(stage, recover()) }()
	f()
	return nil
}
