package rx_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The tests of this file are the contract of `go doc ./rx`, item by item, as
// issue 10 §1 lists them. Each names what must hold and shows, beside it, the
// same setup without the property (its negative control).

// inFlightClock is a clock whose Schedule hands the callback to the test and
// whose stop always reports that the callback is already in flight — the
// moment a timer fires as the subscription ends, made deterministic.
type inFlightClock struct {
	*clock.Mock
	fs []func()
}

func (c *inFlightClock) Schedule(_ time.Duration, f func()) func() bool {
	c.fs = append(c.fs, f)
	return func() bool { return false }
}

func (c *inFlightClock) fireAll() {
	for _, f := range c.fs {
		f()
	}
}

func TestNoTimerNotificationIsDeliveredAfterUnsubscribeHasReturned(t *testing.T) {
	ops := map[string]func(clk clock.Clock) rx.Observable[int]{
		"Timeout": func(clk clock.Clock) rx.Observable[int] { return rx.Timeout(rx.Never[int](), time.Second, clk) },
		"Timer": func(clk clock.Clock) rx.Observable[int] {
			return rx.Map(rx.Timer(time.Second, clk), func(time.Time) int { return 1 })
		},
		"Delay": func(clk clock.Clock) rx.Observable[int] { return rx.Delay(rx.Of(1, 2), time.Second, clk) },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			clk := &inFlightClock{Mock: clock.NewMock()}
			rec := rxtest.Record(nil, op(clk))
			require.NotEmpty(t, clk.fs)
			clk.Add(2 * time.Second) // the timer is due
			rec.Unsubscribe()
			clk.fireAll() // the callback that stop could not prevent
			assert.Empty(t, rec.Events())
		})
		t.Run(name+"/control: the same callback before Unsubscribe delivers", func(t *testing.T) {
			clk := &inFlightClock{Mock: clock.NewMock()}
			rec := rxtest.Record(nil, op(clk))
			clk.Add(2 * time.Second)
			clk.fireAll()
			assert.NotEmpty(t, rec.Events())
		})
	}
	t.Run("Timeout on the real clock, firing as the subscription ends", func(t *testing.T) {
		// Issue 19 §4 made Unsubscribe Rx.NET's Dispose: it does not wait
		// for a delivery another goroutine has started, so the timer's
		// OnError may be in flight as it returns. What must hold: at most
		// that one notification, and none starts after Unsubscribe returned
		// and the callback has finished (checked by firing nothing more).
		for range 300 {
			var n atomic.Int32
			note := func() { n.Add(1) }
			sub := rx.Timeout(rx.Never[int](), 50*time.Microsecond, clock.New()).
				Subscribe(rx.NewObserver(func(int) { note() }, func(error) { note() }, nil))
			time.Sleep(50 * time.Microsecond) // aim the Unsubscribe at the firing; not a wait for an outcome
			sub.Unsubscribe()
			require.LessOrEqual(t, n.Load(), int32(1), "more than the one notification in flight")
		}
	})
}

func TestReplayAndBehaviorSubjectsNeverRecordAValueThatArrivedAfterTheirEnd(t *testing.T) {
	t.Run("racing OnNext and OnCompleted", func(t *testing.T) {
		for i := range 300 {
			s := rx.NewReplaySubject[int](0)
			early := rxtest.Record[int](nil, s)
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); s.OnNext(i) }()
			go func() { defer wg.Done(); s.OnCompleted() }()
			wg.Wait()
			late := rxtest.Record[int](nil, s)
			assert.Equal(t, early.Values(), late.Values(), "a late subscriber is replayed what early ones saw, no more")
			require.NoError(t, early.GrammarErr())
		}
	})
	t.Run("Behavior Value does not change after the end", func(t *testing.T) {
		s := rx.NewBehaviorSubject(1)
		s.OnCompleted()
		s.OnNext(2)
		assert.Equal(t, 1, s.Value())
		assert.True(t, rxtest.Record[int](nil, s).Completed())
		assert.Empty(t, rxtest.Record[int](nil, s).Values())
	})
	t.Run("Behavior Value right after a re-entrant OnNext is the new value", func(t *testing.T) {
		s := rx.NewBehaviorSubject(0)
		var seen []int
		s.Subscribe(rx.NewObserver(func(v int) {
			if v == 1 {
				s.OnNext(2) // queued behind this delivery
				seen = append(seen, s.Value())
			}
		}, nil, nil))
		s.OnNext(1)
		assert.Equal(t, []int{2}, seen)
		assert.Equal(t, 2, s.Value())
	})
}
