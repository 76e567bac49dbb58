package rx_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// resourceLog records, in virtual time, what Using did with a resource.
type resourceLog struct {
	clk    *rxtest.Clock
	events []string
}

func (l *resourceLog) note(what string) {
	l.events = append(l.events, what+"@"+l.clk.Elapsed().String())
}

// Rx.NET UsingTest (Using_Complete, Using_Error, Using_Dispose): the
// resource is made at subscription and released once, when the stream
// ends — after the ending has been forwarded — or when it is unsubscribed.
// Negative control: releasing in the hook only (not after the ending)
// released at the unsubscription, 1s, in the first two cases; a release
// from both paths without the once-guard logged it twice.
func TestUsingReleasesTheResourceOnceWhenTheSubscriptionEnds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		end     []rxtest.Event[int]
		release string
	}{
		{"completion", []rxtest.Event[int]{rxtest.Next(ms(10), 1), rxtest.Completed[int](ms(50))}, "release@250ms"},
		{"error", []rxtest.Event[int]{rxtest.Next(ms(10), 1), rxtest.Error[int](ms(50), rxtest.ErrTest)}, "release@250ms"},
		{"unsubscription", []rxtest.Event[int]{rxtest.Next(ms(10), 1)}, "release@1s"},
	} {
		clk := rxtest.NewClock()
		log := &resourceLog{clk: clk}
		xs := rxtest.Cold(clk, tc.end...)
		res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[int] {
			return rx.Using(
				func() (*resourceLog, error) { log.note("acquire"); return log, nil },
				func(*resourceLog) rx.Observable[int] { return xs },
				func(l *resourceLog) { l.note("release") })
		})
		assert.Len(t, res.Values(), 1, tc.name)
		require.Len(t, log.events, 2, tc.name)
		assert.Equal(t, "acquire@200ms", log.events[0], tc.name)
		assert.Equal(t, tc.release, log.events[len(log.events)-1], tc.name)
		if tc.name != "unsubscription" {
			assert.Equal(t, res.Events()[len(res.Events())-1].At, ms(250), "the ending went down at 250ms, before the release")
		}
	}
}

// acquire's error fails the stream and nothing is released; a nil
// observable from use is an *ArgumentError and the resource is released; a
// panic in use releases it before going on up. Negative control: without
// the deferred release in Subscribe, the panic case released nothing.
func TestUsingReleasesWhatItAcquiredWhenUseFailsOrPanics(t *testing.T) {
	released := 0
	release := func(int) { released++ }
	errAcquire := errors.New("no connection")
	_, err := collect(t, rx.Using(func() (int, error) { return 0, errAcquire }, func(int) rx.Observable[int] { return rx.Return(1) }, release))
	assert.ErrorIs(t, err, errAcquire)
	assert.Zero(t, released)

	_, err = collect(t, rx.Using(func() (int, error) { return 7, nil }, func(int) rx.Observable[int] { return nil }, release))
	as[*rx.ArgumentError](t, err)
	assert.Equal(t, 1, released)

	p := recovered(func() {
		rx.Using(func() (int, error) { return 7, nil }, func(int) rx.Observable[int] { panic("use bug") }, release).
			Subscribe(rxtest.NewRecorder[int](nil))
	})
	assert.Equal(t, "use bug", p)
	assert.Equal(t, 2, released)
}

// The release of an unsubscription made from another goroutine runs once
// even when it races with the source's own ending. Negative control:
// without the CompareAndSwap in rxCancel the race released twice (seen
// under -race within a few hundred rounds).
func TestUsingReleasesOnceWhenAnUnsubscriptionRacesTheEnding(t *testing.T) {
	for range 200 {
		released := make(chan struct{}, 2)
		s := rx.NewSubject[int]()
		sub := rx.Using(func() (int, error) { return 0, nil }, func(int) rx.Observable[int] { return s },
			func(int) { released <- struct{}{} }).Subscribe(rxtest.NewRecorder[int](nil))
		done := make(chan struct{})
		go func() { defer close(done); s.OnCompleted() }()
		sub.Unsubscribe()
		<-done
		select {
		case <-released:
		case <-time.After(30 * time.Second): // catches a hang only; generous for a loaded CI
			t.Fatal("not released")
		}
		require.Empty(t, released, "released twice")
	}
}
