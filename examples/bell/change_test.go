package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/examples/bell/bellstate"
	"github.com/meshrx/meshrx/notifications"
)

// A client applying a stream's events — the whole state, then changes
// (added, changed, gone) — holds after each what the whole state would
// show, for the viewer it is about, whether the change was encoded afresh
// or shared; a change as large as the state goes whole. The negative
// control is the first check: a change applied to a state it does not
// follow (the whole state missed) is refused.
func TestAClientApplyingTheChangesHoldsWhatTheWholeStateShows(t *testing.T) {
	at := time.Date(2026, 12, 2, 4, 0, 0, 500, time.UTC)
	n := func(id, addressee, target string, age time.Duration, read bool) notifications.Notification {
		return notifications.Notification{ID: id, Title: "t" + id, Addressee: addressee, TargetPath: target,
			CreatedAt: at.Add(-age), IsRead: read, Type: notifications.General}
	}
	a := n("a", notifications.Admin, "acme/x", 3*time.Second, false)
	b := n("b", notifications.Admin, "", 2*time.Second, false)
	bRead := b
	bRead.IsRead = true
	c := n("c", notifications.Admin, "acme/x/_Thread/t1", time.Second, false)
	d := n("d", notifications.Admin, "", 0, false) // same time as e: ordered by id
	e := n("e", notifications.Admin, "", 0, false)
	state := func(items ...notifications.Notification) notifications.BellState {
		// As the bell groups them (newest first, by source), here by hand.
		var st notifications.BellState
		index := map[string]int{}
		for _, it := range items {
			if !it.IsRead {
				st.Unread++
			}
			gi, ok := index[it.Source()]
			if !ok {
				gi = len(st.Groups)
				index[it.Source()] = gi
				st.Groups = append(st.Groups, notifications.Group{Source: it.Source()})
			}
			st.Groups[gi].Items = append(st.Groups[gi].Items, it)
		}
		return st
	}
	states := []notifications.BellState{
		state(b, a),
		state(c, bRead, a),       // one added, one read
		state(d, e, c, bRead, a), // two added at the same time
		state(e, c, bRead),       // two gone
		state(),                  // all gone: sent whole
	}
	var cache frameCache
	for _, viewer := range []string{"ops", "root", "ops"} { // the second ops is served from the shared encodings
		var client bellstate.State
		var missed bellstate.State
		for i, st := range states {
			var buf bytes.Buffer
			buf.WriteString("id: " + strconv.Itoa(i+1) + "\n")
			if i == 0 {
				cache.bellEvent(&buf, jsonString(viewer), viewer, st)
			} else {
				cache.changeEvent(&buf, jsonString(viewer), viewer, states[i-1], st)
			}
			var evs []bellstate.Event
			var sp bellstate.Splitter
			require.NoError(t, sp.Feed(buf.Bytes(), func(ev bellstate.Event) error {
				ev.Data = bytes.Clone(ev.Data)
				evs = append(evs, ev)
				return nil
			}))
			require.Len(t, evs, 1)
			wantKind := "change"
			if i == 0 || i == len(states)-1 {
				wantKind = "bell"
			}
			assert.Equal(t, wantKind, evs[0].Name, "event %d", i+1)
			if i == 1 {
				var gap *bellstate.GapError
				assert.ErrorAs(t, missed.Apply(evs[0], nil), &gap, "negative control: a change without the state before it")
			}
			require.NoError(t, client.Apply(evs[0], nil), "event %d: %s", i+1, buf.String())
			got, err := json.Marshal(viewFrom(viewer, &client))
			require.NoError(t, err)
			want, err := json.Marshal(viewOf(viewer, st))
			require.NoError(t, err)
			assert.JSONEq(t, string(want), string(got), "viewer %s, after event %d", viewer, i+1)
		}
	}
}

// rawStream reads a stream's events as they come, unapplied.
func rawStream(t *testing.T, c *http.Client, u string) <-chan bellstate.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	require.NoError(t, err)
	res, err := (&http.Client{Transport: c.Transport}).Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	out := make(chan bellstate.Event, 64)
	ended := make(chan struct{})
	t.Cleanup(func() { cancel(); <-ended })
	go func() {
		defer close(ended)
		defer close(out)
		defer res.Body.Close()
		var sp bellstate.Splitter
		buf := make([]byte, 32<<10)
		for {
			n, err := res.Body.Read(buf)
			_ = sp.Feed(buf[:n], func(ev bellstate.Event) error {
				ev.Data = bytes.Clone(ev.Data)
				select {
				case out <- ev:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if err != nil {
				return
			}
		}
	}()
	return out
}

// nextState returns the next "bell" or "change" event of events.
func nextState(t *testing.T, events <-chan bellstate.Event) bellstate.Event {
	t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "the stream ended")
			if ev.Name == "bell" || ev.Name == "change" {
				return ev
			}
		case <-deadline.C:
			require.FailNow(t, "no state event within the bound")
		}
	}
}

// A client that misses a change (here: drops it) finds out at the next
// one, whose id does not follow, and reconnects: the new stream starts
// with the whole state, which holds what it missed. Negative control: the
// client that stays on its stream after the gap never holds a state again
// (every later change is refused: it awaits a whole state that stream
// does not send), so the reconnect is what recovers it.
func TestAClientThatMissesAChangeReconnectsAndHoldsTheWholeStateAgain(t *testing.T) {
	base, srv := serveBell(t)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	alice := signedIn(srv, tr, "alice")
	send := func(title string) {
		t.Helper()
		status, body := post(t, alice, base+"/send", url.Values{"title": {title}, "to": {"alice"}})
		require.Equal(t, http.StatusOK, status, "%v", body)
	}
	events := rawStream(t, alice, base+"/events")
	var st bellstate.State
	require.NoError(t, st.Apply(nextState(t, events), nil))
	seeded := st.Len()

	send("missed")
	dropped := nextState(t, events)
	require.Equal(t, "change", dropped.Name)
	send("after the gap")
	var gap *bellstate.GapError
	require.ErrorAs(t, st.Apply(nextState(t, events), nil), &gap, "the next change does not follow")
	send("later still")
	require.ErrorAs(t, st.Apply(nextState(t, events), nil), &gap, "negative control: the same stream does not recover")
	assert.Zero(t, st.ID())

	again := rawStream(t, alice, base+"/events")
	whole := nextState(t, again)
	assert.Equal(t, "bell", whole.Name)
	assert.Equal(t, "1", whole.ID, "a new stream starts with the whole state")
	require.NoError(t, st.Apply(whole, nil))
	for _, title := range []string{"missed", "after the gap", "later still"} {
		assert.NotNil(t, st.Find(title), "%q is in the state after the reconnect", title)
	}
	assert.Equal(t, seeded+3, st.Len())
	send("on the new stream")
	require.NoError(t, st.Apply(nextState(t, again), nil))
	assert.NotNil(t, st.Find("on the new stream"))
	assert.Equal(t, uint64(2), st.ID())
}
