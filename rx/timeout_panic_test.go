package rx_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// A panicking observer loses its value, not the stream: the source then
// falls silent, which is what Timeout is there for, and the error must
// still come due after that value. Negative control (run): without the
// emitting flag cleared on the way out of the panic, the timer found the
// value "still being forwarded" at every firing and re-armed itself for
// ever: no error at 10s, nor at 1h, and a timer armed.
func TestTimeoutStillFiresDueAfterAValueWhoseObserverPanicked(t *testing.T) {
	clk := rxtest.NewClock()
	in := rx.NewSubject[int]()
	rec := rxtest.NewRecorder[int](clk)
	guarded := rx.Map(rx.Timeout[int](in, 10*time.Second, clk), func(v int) int {
		if v == 1 {
			panic("observer bug")
		}
		return v
	})
	guarded.Subscribe(rec)
	clk.Advance(3 * time.Second)
	assert.Equal(t, "observer bug", recovered(func() { in.OnNext(1) }))

	clk.Advance(10*time.Second - 1)
	assert.False(t, rec.Terminated(), "not before due after the value")
	clk.Advance(1)
	var te *rx.TimeoutError
	if assert.True(t, errors.As(rec.Err(), &te), "a timeout due after the value: %v", rec.Events()) {
		assert.Equal(t, 13*time.Second, rec.Events()[len(rec.Events())-1].At)
	}
	clk.Advance(time.Hour)
	assert.False(t, in.HasObservers(), "the source is unsubscribed")
	assert.Zero(t, clk.Pending(), "no timer left armed")
}
