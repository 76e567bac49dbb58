package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// samber/ro's OnErrorReturn (and Rx.NET's Catch(Return(v)), CatchTest's
// Catch_Error shape): the values, then v and completion at the error's
// time; a completing source is unchanged. Negative control: passing the
// error on instead (no v) failed the first case.
func TestOnErrorReturnReplacesTheErrorWithAValueAndCompletion(t *testing.T) {
	for _, tc := range []struct {
		end  rxtest.Event[int]
		want []rxtest.Event[int]
	}{
		{rxtest.Error[int](ms(230), rxtest.ErrTest),
			[]rxtest.Event[int]{rxtest.Next(ms(210), 2), rxtest.Next(ms(220), 3), rxtest.Next(ms(230), -1), rxtest.Completed[int](ms(230))}},
		{rxtest.Completed[int](ms(230)),
			[]rxtest.Event[int]{rxtest.Next(ms(210), 2), rxtest.Next(ms(220), 3), rxtest.Completed[int](ms(230))}},
	} {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(ms(150), 1), rxtest.Next(ms(210), 2), rxtest.Next(ms(220), 3), tc.end)
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] { return rx.OnErrorReturn[int](xs, -1) })
		assert.Equal(t, tc.want, res.Events())
		assert.NoError(t, res.GrammarErr())
	}
}
