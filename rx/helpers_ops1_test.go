package rx_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx/rxtest"
)

// failedWith checks that the recorded stream ended with an error at the
// virtual time at, after exactly the values before, and returns the error
// for errors.As / errors.Is checks (typed errors are new pointers, so the
// events cannot be compared whole).
func failedWith[T any](t *testing.T, rec *rxtest.Recorder[T], at time.Duration, before []rxtest.Event[T]) error {
	t.Helper()
	evs := rec.Events()
	require.NotEmpty(t, evs, "the stream recorded nothing")
	last := evs[len(evs)-1]
	require.Equal(t, rxtest.OnError, last.Kind, "the stream did not fail: %v", evs)
	assert.Equal(t, at, last.At, "the failure's virtual time")
	if len(before) == 0 {
		assert.Empty(t, evs[:len(evs)-1], "nothing comes before the failure")
	} else {
		assert.Equal(t, before, evs[:len(evs)-1], "what came before the failure")
	}
	require.NoError(t, rec.GrammarErr())
	return last.Err
}

// as is errors.As returning the target.
func as[E error](t *testing.T, err error) E {
	t.Helper()
	var e E
	require.True(t, errors.As(err, &e), "%v (%T) is not a %T", err, err, e)
	return e
}

// stackDepth is the number of frames on the calling goroutine's stack.
func stackDepth() int {
	pcs := make([]uintptr, 4096)
	return runtime.Callers(0, pcs)
}
