package registry

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// Consumers polling deltas through a real server while publications and
// tier changes land never need a whole index after their first: every
// delta they are answered, whichever document it was answered from while
// another request patched the next, digests to what the server says, and
// when the writes stop each holds what a whole request gives its
// entitlement. Control, in the test: a delta tampered on the way is caught
// by the same count (a whole index fetched after it), so the count would
// show a delta that did not digest.
func TestConsumersPollingWhilePublicationsLandNeverFallBackAndEndWithTheWholeIndex(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	for m := range 20 {
		f.publish(fmt.Sprintf("M%02d", m), "1.0.0", "")
	}
	keys := []string{f.instance("pro1", "pro", "Plugins/*"), f.instance("pro2", "pro", "Plugins/*"), f.instance("free", "free", "Plugins/*")}
	type consumer struct {
		c       *client.Client
		counted *countingHandler
		tag     string
		idx     client.Index
	}
	cs := make([]*consumer, len(keys))
	for i, key := range keys {
		c, counted := f.consumer(key)
		idx, tag, err := indexVia(t, c, "")
		require.NoError(t, err)
		cs[i] = &consumer{c: c, counted: counted, tag: tag, idx: idx}
	}
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Bound)
	defer cancel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, len(cs))
	var polls atomic.Int64
	for _, cs := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				idx, tag, err := cs.c.Index(ctx, cs.tag)
				polls.Add(1)
				switch {
				case err == nil:
					cs.idx, cs.tag = idx, tag
				case err != client.ErrNotModified:
					errs <- err
					return
				}
			}
		}()
	}
	for k := range 30 {
		m := fmt.Sprintf("M%02d", k%20)
		switch k % 3 {
		case 0:
			f.publish(m, fmt.Sprintf("1.%d.0", k+1), "")
		case 1:
			f.putPackage(packageNode(m, `{"tier":"pro"}`)) // hidden from free
		default:
			f.publish(fmt.Sprintf("N%02d", k), "1.0.0", "")
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	t.Logf("%d polls while 30 writes landed", polls.Load())
	for i, cs := range cs {
		idx, tag, err := indexVia(t, cs.c, cs.tag)
		if err == nil {
			cs.idx, cs.tag = idx, tag
		} else {
			require.ErrorIs(t, err, client.ErrNotModified)
		}
		want, got := f.index(keys[i])
		assert.Equal(t, got.header.Get("ETag"), cs.tag, "consumer %d holds the whole index's document", i)
		assert.Equal(t, listed(want), listed(cs.idx), "consumer %d", i)
		_, fulls := cs.counted.requests()
		assert.Equal(t, int64(1), fulls, "consumer %d: no whole index after the first", i)
	}

	// Control: the count sees a delta that does not digest.
	c, counted := f.consumer(keys[0])
	_, tag, err := indexVia(t, c, "")
	require.NoError(t, err)
	counted.tamper = wrongCount
	f.publish("M00", "9.0.0", "")
	_, _, err = indexVia(t, c, tag)
	require.NoError(t, err)
	_, fulls := counted.requests()
	assert.Equal(t, int64(2), fulls, "control: a delta that does not digest costs a whole index")
}

// The Reconciler, unchanged, keeps a consumer current while its polls
// alternate between deltas and whole indexes (every other delta arrives
// wrong, so the client falls back): every poll is healthy and the applied
// versions are the registry's after each publication. Control: the
// alternation happens (whole indexes fetched after the first).
func TestTheReconcilerStaysCurrentWhileDeltasAndWholeIndexesAlternate(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	f.publish("B", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	c, counted := f.consumer(key)
	var n atomic.Int64
	counted.tamper = func(b []byte) []byte {
		if n.Add(1)%2 == 0 {
			return b
		}
		return wrongCount(b)
	}
	clk := rxtest.NewClock()
	polls := make(chan client.ReconcilerStatus, 4)
	const every = time.Minute
	r := &client.Reconciler{Client: c, Interval: every, Clock: clk, TempDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
		Apply:  func(context.Context, client.IndexEntry, io.Reader) error { return nil },
		Polled: func(st client.ReconcilerStatus) { polls <- st }}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		testkit.Receive(t, done, "Run returning once stopped")
	})
	st := testkit.Receive(t, polls, "the first poll")
	require.True(t, st.Healthy, st.LastError)
	for k := range 8 {
		v := fmt.Sprintf("%d.0.0", k+2)
		f.publish([]string{"A", "B"}[k%2], v, "")
		want, _ := f.index(key)
		clk.Advance(every)
		st = testkit.Receive(t, polls, "a poll")
		assert.True(t, st.Healthy, "poll %d: %s", k, st.LastError)
		assert.Equal(t, listed(want), st.Applied, "poll %d", k)
	}
	deltas, fulls := counted.requests()
	t.Logf("%d delta requests, %d whole indexes", deltas, fulls)
	assert.Equal(t, int64(8), deltas)
	assert.Equal(t, int64(1+4), fulls, "control: every other poll fell back to the whole index")
}

// wrongCount rewrites a delta's entry count (n becomes 9n): the delta then
// does not give the index its digest names.
func wrongCount(b []byte) []byte { return bytes.Replace(b, []byte(`"count":`), []byte(`"count":9`), 1) }
