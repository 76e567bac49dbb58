package rx_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// After Rx.NET SequenceEqualTest's Observable cases (SequenceEqual_Equal,
// _NotEqual_Left, _Left_Longer, _Right_Longer; their shape, shorter
// vectors, expectations derived here): true when both complete level, false
// at the first unequal pair or as soon as one side is known to be longer,
// both sides then unsubscribed. Negative control: comparing only at the
// end (answering from the completions) gave false at 400 for the unequal
// pair and the spans Sub(200, 400).
func TestSequenceEqualAnswersFalseAtTheFirstDifferenceAndTrueWhenBothEndLevel(t *testing.T) {
	type ev = rxtest.Event[int]
	for _, tc := range []struct {
		name string
		a, b []ev
		want []rxtest.Event[bool]
		end  int // when both sides are unsubscribed
	}{
		{"equal",
			[]ev{rxtest.Next(ms(210), 1), rxtest.Next(ms(300), 2), rxtest.Completed[int](ms(400))},
			[]ev{rxtest.Next(ms(250), 1), rxtest.Next(ms(260), 2), rxtest.Completed[int](ms(350))},
			[]rxtest.Event[bool]{rxtest.Next(ms(400), true), rxtest.Completed[bool](ms(400))}, 400},
		{"not equal",
			[]ev{rxtest.Next(ms(210), 1), rxtest.Next(ms(300), 3), rxtest.Completed[int](ms(400))},
			[]ev{rxtest.Next(ms(250), 1), rxtest.Next(ms(260), 2), rxtest.Completed[int](ms(350))},
			[]rxtest.Event[bool]{rxtest.Next(ms(300), false), rxtest.Completed[bool](ms(300))}, 300},
		{"left longer",
			[]ev{rxtest.Next(ms(210), 1), rxtest.Next(ms(300), 2), rxtest.Completed[int](ms(400))},
			[]ev{rxtest.Next(ms(250), 1), rxtest.Completed[int](ms(270))},
			[]rxtest.Event[bool]{rxtest.Next(ms(300), false), rxtest.Completed[bool](ms(300))}, 300},
		{"right longer, known at the left's completion",
			[]ev{rxtest.Next(ms(210), 1), rxtest.Completed[int](ms(220))},
			[]ev{rxtest.Next(ms(230), 1), rxtest.Next(ms(240), 2), rxtest.Completed[int](ms(500))},
			[]rxtest.Event[bool]{rxtest.Next(ms(240), false), rxtest.Completed[bool](ms(240))}, 240},
	} {
		clk := rxtest.NewClock()
		xs, ys := rxtest.Hot(clk, tc.a...), rxtest.Hot(clk, tc.b...)
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[bool] { return rx.SequenceEqual[int](xs, ys) })
		assert.Equal(t, tc.want, res.Events(), tc.name)
		for _, s := range [][]rxtest.Span{xs.Subscriptions(), ys.Subscriptions()} {
			require.Len(t, s, 1, tc.name)
			assert.LessOrEqual(t, s[0].Unsubscribed, ms(tc.end), "%s: a side outlived the answer", tc.name)
		}
	}
}

// The side ahead is bounded as Zip2's: past rx.ZipLimit values waiting for
// partners the stream fails with an *OverflowError instead of growing.
// Negative control: without the limit check the stream never ended (the
// other side never emits) and held all 65,546 values: collect's
// "did not terminate" check failed.
func TestSequenceEqualBoundsHowFarOneSideMayRunAhead(t *testing.T) {
	vs, err := collect(t, rx.SequenceEqual(rx.Range(0, rx.ZipLimit+10), rx.Never[int]()))
	assert.Empty(t, vs)
	var oe *rx.OverflowError
	require.True(t, errors.As(err, &oe), "got %v", err)
	assert.Equal(t, rx.OverflowError{Op: "SequenceEqual", Limit: rx.ZipLimit}, *oe)

	vs, err = collect(t, rx.SequenceEqual(rx.Range(0, 1000), rx.Range(0, 1000)))
	require.NoError(t, err)
	assert.Equal(t, []bool{true}, vs, "two synchronous sources of the same values")
}
