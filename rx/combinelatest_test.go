package rx_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestCombineLatestEmitsOncePairedAndCompletesWhenBothHave(t *testing.T) {
	clk := rxtest.NewClock()
	a := rxtest.Hot(clk, rxtest.Next(210*tick, 1), rxtest.Next(240*tick, 2), rxtest.Completed[int](300*tick))
	b := rxtest.Hot(clk, rxtest.Next(220*tick, "x"), rxtest.Next(250*tick, "y"), rxtest.Completed[string](400*tick))
	res := rxtest.Start(clk, 200*tick, 1000*tick, func() rx.Observable[string] {
		return rx.CombineLatest2[int, string](a, b, func(n int, s string) string { return s + string(rune('0'+n)) })
	})
	assert.Equal(t, []rxtest.Event[string]{
		rxtest.Next(220*tick, "x1"), rxtest.Next(240*tick, "x2"), rxtest.Next(250*tick, "y2"), rxtest.Completed[string](400 * tick),
	}, res.Events())
}

func TestCombineLatestCompletesAtOnceWhenASideEndsEmpty(t *testing.T) {
	rec := rxtest.Record(nil, rx.CombineLatest2(rx.Empty[int](), rx.Never[int](), func(a, b int) int { return a + b }))
	assert.True(t, rec.Completed())
}

func TestCombineLatestIsSafeWithBothSidesOnOtherGoroutines(t *testing.T) {
	rec := rxtest.NewRecorder[int](nil)
	rx.CombineLatest2(goroutineInner(0, 2000), goroutineInner(1, 2000), func(a, b int) int { return a + b }).Subscribe(rec)
	require.True(t, rec.WaitTerminated(10*time.Second))
	require.NoError(t, rec.GrammarErr())
	assert.True(t, rec.Completed())
}
