package answer

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// An answer a route has at once (Now) is written, through a real server,
// untouched and without the budget's timer being scheduled; subscribed as
// a stream it is one value and completion, as rx.Return gives it. Negative
// control: the same answer as rx.Return schedules the budget's timer.
func TestANowAnswerIsWrittenWithoutTheBudgetsTimerAndSubscribesAsReturn(t *testing.T) {
	want := Answer{Status: http.StatusNotModified, Header: http.Header{"Etag": {`"x"`}}}
	for _, control := range []bool{false, true} {
		clk := rxtest.NewClock()
		d := Deadline{Route: "GET /now", Budget: 10e9, Clock: clk}
		srv := serve(t, Arrival(clk, d.Handler(func(*http.Request) rx.Observable[Answer] {
			if control {
				return rx.Return(want)
			}
			return Now(want)
		})))
		ctx, cancel := context.WithCancel(t.Context())
		got := <-fetch(ctx, srv, "/now")
		cancel()
		require.NoError(t, got.err)
		assert.Equal(t, http.StatusNotModified, got.status)
		assert.Equal(t, `"x"`, got.header.Get("Etag"))
		if control {
			assert.Positive(t, clk.Scheduled(), "negative control: a stream's answer arms the budget")
			continue
		}
		assert.Zero(t, clk.Scheduled(), "no timer for an answer had at once")
	}
	vals, err := rx.Collect(t.Context(), Now(want))
	require.NoError(t, err)
	assert.Equal(t, []Answer{want}, vals)
}
