package rx

import (
	"errors"
	"fmt"
)

// ErrMoreThanOne is matched (errors.Is) by the error of Single on a stream
// with a second value: Rx.NET's InvalidOperationException "Sequence contains
// more than one element", RxJS's SequenceError.
var ErrMoreThanOne = errors.New("rx: the stream has more than one value")

// SequenceError ends a stream whose operator needed a shape the stream did
// not have: Last, Single, Min, Max, Average on an empty stream (Err is
// ErrEmpty), Single on a stream with a second value (ErrMoreThanOne). It
// unwraps to Err, so errors.Is(err, rx.ErrEmpty) holds for the first kind.
type SequenceError struct {
	Op  string // the operator, e.g. "Single"
	Err error  // ErrEmpty or ErrMoreThanOne
}

func (e *SequenceError) Error() string {
	msg := e.Err.Error()
	if len(msg) > 4 && msg[:4] == "rx: " {
		msg = msg[4:]
	}
	return "rx." + e.Op + ": " + msg
}

// Unwrap returns Err.
func (e *SequenceError) Unwrap() error { return e.Err }

// IndexError ends an ElementAt whose stream completed with Count values,
// not more than Index (Rx.NET's ArgumentOutOfRangeException at completion,
// RxJS's ArgumentOutOfRangeError).
type IndexError struct {
	Op           string
	Index, Count int
}

func (e *IndexError) Error() string {
	return fmt.Sprintf("rx.%s: index %d out of range: the stream had %d values", e.Op, e.Index, e.Count)
}

// DuplicateKeyError ends a ToMap whose project function returned a key
// twice (Rx.NET's ToDictionary fails so, with an ArgumentException): the map
// would otherwise lose one of the values silently.
type DuplicateKeyError struct {
	Op  string
	Key any
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("rx.%s: duplicate key %v", e.Op, e.Key)
}

// ArithmeticOverflowError ends a Sum whose total no longer fits its type
// (Rx.NET's Sum is checked arithmetic and fails with an OverflowException);
// Type names the type, e.g. "int8".
type ArithmeticOverflowError struct {
	Op   string
	Type string
}

func (e *ArithmeticOverflowError) Error() string {
	return fmt.Sprintf("rx.%s: the result overflows %s", e.Op, e.Type)
}
