package rx

import (
	"errors"
	"fmt"
	"time"
)

// ErrTimeout is matched (errors.Is) by every *TimeoutError.
var ErrTimeout = errors.New("rx: timeout")

// ErrEmpty is returned by First when the stream completed with no value.
var ErrEmpty = errors.New("rx: the stream completed without a value")

// TimeoutError ends a stream that waited longer than its bound. Stage names
// what was being waited on, when the bound was declared with TimeoutStage.
type TimeoutError struct {
	Stage string
	After time.Duration
}

func (e *TimeoutError) Error() string {
	if e.Stage == "" {
		return fmt.Sprintf("rx: no value within %s", e.After)
	}
	return fmt.Sprintf("%s: no answer within %s", e.Stage, e.After)
}

// Is reports whether target is ErrTimeout.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// RangeError is the error of a Range whose values would pass the largest int.
type RangeError struct {
	Start, Count int
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("rx.Range(%d, %d): the values would pass the largest int", e.Start, e.Count)
}
