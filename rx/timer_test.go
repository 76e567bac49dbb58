package rx_test

import (
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestTimerEmitsTheTimeOnceDueThenCompletes(t *testing.T) {
	clk := rxtest.NewClock()
	rec := rxtest.Record(clk, rx.Timer(30*tick, clk))
	clk.Advance(30*tick - 1)
	assert.Empty(t, rec.Events())
	clk.Advance(1)
	require.Len(t, rec.Events(), 2)
	assert.Equal(t, clk.Start().Add(30*tick), rec.Values()[0])
	assert.Equal(t, rxtest.Completed[time.Time](30*tick), rec.Events()[1])
}

func TestTimerIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	rec := rxtest.NewRecorder[time.Time](nil)
	rx.Timer(time.Second, mock).Subscribe(rec)
	mock.Add(999 * time.Millisecond)
	require.False(t, rec.WaitTerminated(20*time.Millisecond), "fired early")
	mock.Add(time.Millisecond)
	require.True(t, rec.WaitTerminated(5*time.Second))
	assert.Equal(t, []time.Time{time.Unix(1, 0)}, rec.Values())
}
