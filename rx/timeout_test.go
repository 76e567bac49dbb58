package rx_test

import (
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func errTimeoutAt(at time.Duration) rxtest.Event[int] {
	return rxtest.Error[int](at, &rx.TimeoutError{After: 200 * tick})
}

// withFallback is Rx.NET's Timeout(due, other) spelled with the contract's
// operators: a timeout switches to other, any other error passes.
func withFallback(src rx.Observable[int], due time.Duration, other rx.Observable[int], clk *rxtest.Clock) rx.Observable[int] {
	return rx.Catch(rx.Timeout(src, due, clk), func(err error) rx.Observable[int] {
		if errors.Is(err, rx.ErrTimeout) {
			return other
		}
		return nil
	})
}

func TestTimeoutPassesASourceThatKeepsItsBound(t *testing.T) { // Timeout_InTime
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk,
		rxtest.Next(150*tick, 1), rxtest.Next(210*tick, 2), rxtest.Next(230*tick, 3),
		rxtest.Next(260*tick, 4), rxtest.Next(300*tick, 5), rxtest.Next(350*tick, 6),
		rxtest.Completed[int](400*tick))
	res := rxtest.Start(clk, 200*tick, 1000*tick, func() rx.Observable[int] { return rx.Timeout[int](xs, 500*tick, clk) })
	assert.Equal(t, []rxtest.Event[int]{
		rxtest.Next(210*tick, 2), rxtest.Next(230*tick, 3), rxtest.Next(260*tick, 4),
		rxtest.Next(300*tick, 5), rxtest.Next(350*tick, 6), rxtest.Completed[int](400 * tick),
	}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(200*tick, 400*tick)}, xs.Subscriptions())
	assert.Zero(t, clk.Pending(), "the completion disarms the timer")
	require.NoError(t, res.GrammarErr())
}

func TestTimeoutFiresAtItsBoundAndUnsubscribesTheSource(t *testing.T) { // Timeout_TimeSpan_TimeoutOccurs_WithDefaultException
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(410*tick, 1))
	res := rxtest.Start(clk, 200*tick, 1000*tick, func() rx.Observable[int] { return rx.Timeout[int](xs, 200*tick, clk) })
	assert.Equal(t, []rxtest.Event[int]{errTimeoutAt(400 * tick)}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(200*tick, 400*tick)}, xs.Subscriptions())
	// Negative control: a bound one tick longer lets the value at 410 through.
	clk2 := rxtest.NewClock()
	xs2 := rxtest.Hot(clk2, rxtest.Next(410*tick, 1))
	res2 := rxtest.Start(clk2, 200*tick, 1000*tick, func() rx.Observable[int] { return rx.Timeout[int](xs2, 211*tick, clk2) })
	assert.Equal(t, []int{1}, res2.Values())
}

func TestTimeoutVectorsOfRxNet(t *testing.T) {
	ex := errors.New("boom")
	cases := []struct {
		name     string
		xs       []rxtest.Event[int]
		ys       []rxtest.Event[int]
		want     []rxtest.Event[int]
		wantXs   []rxtest.Span
		wantYs   []rxtest.Span
		fallback bool
	}{
		{
			name:   "Timeout_TimeoutOccurs_1",
			xs:     []rxtest.Event[int]{rxtest.Next(70*tick, 1), rxtest.Next(130*tick, 2), rxtest.Next(310*tick, 3), rxtest.Next(400*tick, 4), rxtest.Completed[int](500 * tick)},
			ys:     []rxtest.Event[int]{rxtest.Next(50*tick, -1), rxtest.Next(200*tick, -2), rxtest.Next(310*tick, -3), rxtest.Completed[int](320 * tick)},
			want:   []rxtest.Event[int]{rxtest.Next(350*tick, -1), rxtest.Next(500*tick, -2), rxtest.Next(610*tick, -3), rxtest.Completed[int](620 * tick)},
			wantXs: []rxtest.Span{rxtest.Sub(200*tick, 300*tick)},
			wantYs: []rxtest.Span{rxtest.Sub(300*tick, 620*tick)},
		},
		{
			name:   "Timeout_TimeoutOccurs_2",
			xs:     []rxtest.Event[int]{rxtest.Next(70*tick, 1), rxtest.Next(130*tick, 2), rxtest.Next(240*tick, 3), rxtest.Next(310*tick, 4), rxtest.Next(430*tick, 5), rxtest.Completed[int](500 * tick)},
			ys:     []rxtest.Event[int]{rxtest.Next(50*tick, -1), rxtest.Next(200*tick, -2), rxtest.Next(310*tick, -3), rxtest.Completed[int](320 * tick)},
			want:   []rxtest.Event[int]{rxtest.Next(240*tick, 3), rxtest.Next(310*tick, 4), rxtest.Next(460*tick, -1), rxtest.Next(610*tick, -2), rxtest.Next(720*tick, -3), rxtest.Completed[int](730 * tick)},
			wantXs: []rxtest.Span{rxtest.Sub(200*tick, 410*tick)},
			wantYs: []rxtest.Span{rxtest.Sub(410*tick, 730*tick)},
		},
		{
			name:   "Timeout_TimeoutOccurs_Never",
			xs:     []rxtest.Event[int]{rxtest.Next(70*tick, 1), rxtest.Next(130*tick, 2), rxtest.Next(240*tick, 3), rxtest.Next(310*tick, 4), rxtest.Next(430*tick, 5), rxtest.Completed[int](500 * tick)},
			want:   []rxtest.Event[int]{rxtest.Next(240*tick, 3), rxtest.Next(310*tick, 4)},
			wantXs: []rxtest.Span{rxtest.Sub(200*tick, 410*tick)},
			wantYs: []rxtest.Span{rxtest.Sub(410*tick, 1000*tick)},
		},
		{
			name:   "Timeout_TimeoutOccurs_Completed",
			xs:     []rxtest.Event[int]{rxtest.Completed[int](500 * tick)},
			ys:     []rxtest.Event[int]{rxtest.Next(100*tick, -1)},
			want:   []rxtest.Event[int]{rxtest.Next(400*tick, -1)},
			wantXs: []rxtest.Span{rxtest.Sub(200*tick, 300*tick)},
			wantYs: []rxtest.Span{rxtest.Sub(300*tick, 1000*tick)},
		},
		{
			name:   "Timeout_TimeoutOccurs_Error",
			xs:     []rxtest.Event[int]{rxtest.Error[int](500*tick, ex)},
			ys:     []rxtest.Event[int]{rxtest.Next(100*tick, -1)},
			want:   []rxtest.Event[int]{rxtest.Next(400*tick, -1)},
			wantXs: []rxtest.Span{rxtest.Sub(200*tick, 300*tick)},
			wantYs: []rxtest.Span{rxtest.Sub(300*tick, 1000*tick)},
		},
		{
			name:   "Timeout_TimeoutOccurs_NextIsError",
			xs:     []rxtest.Event[int]{rxtest.Next(500*tick, 42)},
			ys:     []rxtest.Event[int]{rxtest.Error[int](100*tick, ex)},
			want:   []rxtest.Event[int]{rxtest.Error[int](400*tick, ex)},
			wantXs: []rxtest.Span{rxtest.Sub(200*tick, 300*tick)},
			wantYs: []rxtest.Span{rxtest.Sub(300*tick, 400*tick)},
		},
		{
			name:   "Timeout_TimeoutNotOccurs_Completed",
			xs:     []rxtest.Event[int]{rxtest.Completed[int](250 * tick)},
			ys:     []rxtest.Event[int]{rxtest.Next(100*tick, -1)},
			want:   []rxtest.Event[int]{rxtest.Completed[int](250 * tick)},
			wantXs: []rxtest.Span{rxtest.Sub(200*tick, 250*tick)},
		},
		{
			name:   "Timeout_TimeoutNotOccurs_Error",
			xs:     []rxtest.Event[int]{rxtest.Error[int](250*tick, ex)},
			ys:     []rxtest.Event[int]{rxtest.Next(100*tick, -1)},
			want:   []rxtest.Event[int]{rxtest.Error[int](250*tick, ex)},
			wantXs: []rxtest.Span{rxtest.Sub(200*tick, 250*tick)},
		},
		{
			name:   "Timeout_TimeoutDoesNotOccur",
			xs:     []rxtest.Event[int]{rxtest.Next(70*tick, 1), rxtest.Next(130*tick, 2), rxtest.Next(240*tick, 3), rxtest.Next(320*tick, 4), rxtest.Next(410*tick, 5), rxtest.Completed[int](500 * tick)},
			ys:     []rxtest.Event[int]{rxtest.Next(50*tick, -1), rxtest.Next(200*tick, -2), rxtest.Next(310*tick, -3), rxtest.Completed[int](320 * tick)},
			want:   []rxtest.Event[int]{rxtest.Next(240*tick, 3), rxtest.Next(320*tick, 4), rxtest.Next(410*tick, 5), rxtest.Completed[int](500 * tick)},
			wantXs: []rxtest.Span{rxtest.Sub(200*tick, 500*tick)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := rxtest.NewClock()
			xs := rxtest.Hot(clk, tc.xs...)
			ys := rxtest.Cold(clk, tc.ys...)
			res := rxtest.Start(clk, 200*tick, 1000*tick, func() rx.Observable[int] {
				return withFallback(xs, 100*tick, ys, clk)
			})
			assert.Equal(t, tc.want, res.Events())
			assert.Equal(t, tc.wantXs, xs.Subscriptions())
			assert.Equal(t, tc.wantYs, ys.Subscriptions())
			require.NoError(t, res.GrammarErr())
			assert.Zero(t, clk.Pending(), "no timer is left armed")
		})
	}
}

func TestTimeoutFiresExactlyDueAfterTheLastValueNeverEarlyNeverLate(t *testing.T) {
	for _, gaps := range [][]time.Duration{
		{1},
		{37 * tick},
		{99*tick + 999999},
		{60 * tick, 60 * tick, 60 * tick},
		{99 * tick, 1, 99 * tick, 3},
	} {
		clk := rxtest.NewClock()
		subject := rx.NewSubject[int]()
		rec := rxtest.Record(clk, rx.Timeout[int](subject, 100*tick, clk))
		var last time.Duration
		for i, g := range gaps {
			last += g
			clk.Schedule(last, func() { subject.OnNext(i) })
		}
		clk.Advance(last + 100*tick - 1)
		require.False(t, rec.Terminated(), "no error before the bound (gaps %v)", gaps)
		clk.Advance(1)
		require.Len(t, rec.Values(), len(gaps))
		require.ErrorIs(t, rec.Err(), rx.ErrTimeout, "error exactly at the bound (gaps %v)", gaps)
		require.Equal(t, last+100*tick, rec.Events()[len(gaps)].At)
	}
}

func TestTimeoutArmsNoTimerPerValue(t *testing.T) {
	clk := rxtest.NewClock()
	subject := rx.NewSubject[int]()
	rec := rxtest.Record(clk, rx.Timeout[int](subject, 100*tick, clk))
	before := clk.Scheduled()
	for i := 0; i < 1000; i++ {
		subject.OnNext(i)
		clk.Advance(tick)
	}
	// 1000 values over 1000 ticks: the timer re-arms only when it fires, at
	// most once per bound (11 times), never once per value.
	assert.LessOrEqual(t, clk.Scheduled()-before, 11)
	assert.Len(t, rec.Values(), 1000)
	clk.Advance(100 * tick)
	assert.ErrorIs(t, rec.Err(), rx.ErrTimeout)
}

func TestTimeoutStageNamesWhatWasWaitedOn(t *testing.T) {
	clk := rxtest.NewClock()
	rec := rxtest.Record(clk, rx.TimeoutStage(rx.Never[int](), "instance key", 10*time.Second, clk))
	clk.Advance(10 * time.Second)
	var te *rx.TimeoutError
	require.ErrorAs(t, rec.Err(), &te)
	assert.Equal(t, rx.TimeoutError{Stage: "instance key", After: 10 * time.Second}, *te)
	assert.True(t, errors.Is(rec.Err(), rx.ErrTimeout))
	assert.EqualError(t, rec.Err(), "instance key: no answer within 10s")
}

func TestATimeoutWhoseBudgetIsSpentFailsWithoutSubscribing(t *testing.T) {
	clk := rxtest.NewClock()
	subscribed := false
	src := rx.Defer(func() rx.Observable[int] { subscribed = true; return rx.Return(1) })
	rec := rxtest.Record(clk, rx.TimeoutStage(src, "answer", 0, clk))
	assert.ErrorIs(t, rec.Err(), rx.ErrTimeout)
	assert.False(t, subscribed)
}

func TestTimeoutIsCorrectOnAPlainMockClock(t *testing.T) {
	mock := clock.NewMock()
	subject := rx.NewSubject[int]()
	rec := rxtest.NewRecorder[int](nil)
	rx.Timeout[int](subject, 100*time.Millisecond, mock).Subscribe(rec)
	mock.Add(60 * time.Millisecond)
	subject.OnNext(1) // the bound restarts here: due at 160 ms
	mock.Add(60 * time.Millisecond)
	// The mock runs AfterFunc callbacks on goroutines: the early fire at
	// 100 ms must re-arm rather than time out.
	require.False(t, rec.WaitTerminated(50*time.Millisecond), "timed out before its bound")
	mock.Add(40 * time.Millisecond)
	require.True(t, rec.WaitTerminated(5*time.Second), "the timeout never fired")
	assert.Equal(t, []int{1}, rec.Values())
	assert.ErrorIs(t, rec.Err(), rx.ErrTimeout)
	require.NoError(t, rec.GrammarErr())
}

func TestAValueArrivingExactlyAtTheBoundLosesToTheTimerArmedBeforeIt(t *testing.T) {
	// The bound is "due passes without a value": at the tie the timer, armed
	// first, runs first (FIFO on ties, as Rx.NET's TestScheduler).
	clk := rxtest.NewClock()
	src := rx.Concat(rx.Return(1), rx.Map(rx.Timer(100*tick, clk), func(time.Time) int { return 2 }))
	rec := rxtest.Record(clk, rx.Timeout(src, 100*tick, clk))
	clk.Advance(100 * tick)
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(0, 1), rxtest.Error[int](100*tick, &rx.TimeoutError{After: 100 * tick})}, rec.Events())
}
