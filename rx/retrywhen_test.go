package rx_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// failsAfterTwo is a cold source: 1 at 10ms, 2 at 20ms, an error at 30ms.
func failsAfterTwo(clk *rxtest.Clock) *rxtest.TestObservable[int] {
	return rxtest.Cold(clk, rxtest.Next(ms(10), 1), rxtest.Next(ms(20), 2), rxtest.Error[int](ms(30), rxtest.ErrTest))
}

// After Rx.NET RetryWhenTest: a notifier that delays each retry by 50ms
// (Delay of the errors) and allows two resubscribes (Take), then completes
// the stream. Negative control: the same notifier without the delay
// resubscribes at the failure's instant.
func TestRetryWhenResubscribesWhenTheNotifierEmitsAndCompletesWithIt(t *testing.T) {
	run := func(delay time.Duration) (*rxtest.Recorder[int], *rxtest.TestObservable[int]) {
		clk := rxtest.NewClock()
		xs := failsAfterTwo(clk)
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] {
			return rx.RetryWhen(xs, func(errs rx.Observable[error]) rx.Observable[error] {
				if delay > 0 {
					errs = rx.Delay(errs, delay, clk)
				}
				return rx.Take(errs, 2)
			})
		})
		return res, xs
	}
	res, xs := run(ms(50))
	assert.Equal(t, []rxtest.Event[int]{rxtest.Next(ms(210), 1), rxtest.Next(ms(220), 2),
		rxtest.Next(ms(290), 1), rxtest.Next(ms(300), 2), rxtest.Completed[int](ms(360))}, res.Events())
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(230)), rxtest.Sub(ms(280), ms(310)), rxtest.Sub(ms(360), ms(360))},
		xs.Subscriptions())

	res, xs = run(0)
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(230)), rxtest.Sub(ms(230), ms(260)), rxtest.Sub(ms(260), ms(260))},
		xs.Subscriptions(), "control")
	assert.True(t, res.Completed())
}

// The notifier's error fails the stream. Negative control: src completing
// completes the stream without consulting the notifier.
func TestRetryWhenFailsWithTheNotifiersError(t *testing.T) {
	stop := errors.New("give up")
	giveUp := func(errs rx.Observable[error]) rx.Observable[int] {
		return rx.SelectMany(errs, func(error) rx.Observable[int] { return rx.Throw[int](stop) })
	}
	_, err := collect(t, rx.RetryWhen(rx.Concat(rx.Of(1), rx.Throw[int](rxtest.ErrTest)), giveUp))
	assert.ErrorIs(t, err, stop)
	vs, err := collect(t, rx.RetryWhen(rx.Of(1, 2), giveUp))
	assert.NoError(t, err, "control")
	assert.Equal(t, []int{1, 2}, vs)
}

// A synchronous failure resubscribed synchronously runs from a loop.
// Negative control: the count shows every attempt ran. (The n-th signal
// and the notifier's completion arrive inside the same attempt's failure:
// as in Rx.NET's trampolined RetryWhen the completion ends the stream
// before that resubscription starts, so there are n attempts, not n+1.)
func TestRetryWhenOfASynchronousFailureDoesNotGrowTheStack(t *testing.T) {
	const n = 100_000
	attempts := 0
	src := rx.Defer(func() rx.Observable[int] { attempts++; return rx.Throw[int](rxtest.ErrTest) })
	_, err := collect(t, rx.RetryWhen(src, func(errs rx.Observable[error]) rx.Observable[error] { return rx.Take(errs, n) }))
	assert.NoError(t, err)
	assert.Equal(t, n, attempts)
}

func TestRetryWhenFailsWhenTheHandlerReturnsNil(t *testing.T) {
	_, err := collect(t, rx.RetryWhen(rx.Of(1), func(rx.Observable[error]) rx.Observable[int] { return nil }))
	assert.Error(t, err)
}

// A notifier value that arrives while an attempt runs does not cut it
// short. Negative control: when the attempts fail, each tick resubscribes.
func TestRetryWhenIgnoresTheNotifierWhileAnAttemptRuns(t *testing.T) {
	run := func(src func(clk *rxtest.Clock) *rxtest.TestObservable[int]) int {
		clk := rxtest.NewClock()
		xs := src(clk)
		rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] {
			return rx.RetryWhen(xs, func(rx.Observable[error]) rx.Observable[int] { return rx.Interval(ms(100), clk) })
		})
		return len(xs.Subscriptions())
	}
	assert.Equal(t, 1, run(func(clk *rxtest.Clock) *rxtest.TestObservable[int] {
		return rxtest.Cold(clk, rxtest.Next(ms(10), 1))
	}))
	assert.Equal(t, 8, run(func(clk *rxtest.Clock) *rxtest.TestObservable[int] {
		return rxtest.Cold(clk, rxtest.Error[int](ms(10), rxtest.ErrTest))
	}), "control: one attempt at 200, one per tick from 300 to 900 (the unsubscription at 1000 runs before that tick)")
}
