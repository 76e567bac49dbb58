package bellstate_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/examples/bell/bellstate"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const item = `{"id":"%s","title":"%s","message":"","icon":"","targetPath":"","recipient":"Admin","type":"General","createdBy":"ops","createdAt":"2026-12-02T04:00:00.%09dZ","isRead":false,"addressee":"Admin","own":false,"source":""}`

func events(t *testing.T, viewer string) []bellstate.Event {
	t.Helper()
	a, b := fmt.Sprintf(item, "a", "first", 1), fmt.Sprintf(item, "b", "second", 2)
	return []bellstate.Event{
		{Name: "bell", ID: "1", Data: []byte(`{"viewer":"` + viewer + `","unread":1,"groups":[{"source":"","items":[` + a + `]}]}`)},
		{Name: "change", ID: "2", Data: []byte(`{"viewer":"` + viewer + `","unread":2,"count":2,"put":[` + b + `],"remove":[]}`)},
		{Name: "change", ID: "3", Data: []byte(`{"viewer":"` + viewer + `","unread":1,"count":1,"put":[],"remove":[{"addressee":"ADMIN","id":"a"}]}`)},
	}
}

// Two viewers' states applying the same changes share their decoding
// through a Cache (the same *Item), and each ends as the events say; the
// control is the same events without a Cache: equal states, not the same
// items.
func TestViewersApplyingTheSameChangesShareTheirDecoding(t *testing.T) {
	var cache bellstate.Cache
	var ops, root, alone bellstate.State
	for i, ev := range events(t, "ops") {
		require.NoError(t, ops.Apply(ev, &cache), "ops %d", i)
		require.NoError(t, alone.Apply(ev, nil), "alone %d", i)
		if i == 1 {
			assert.NotNil(t, ops.Find("first"))
		}
	}
	for i, ev := range events(t, "root") {
		require.NoError(t, root.Apply(ev, &cache), "root %d", i)
	}
	assert.Equal(t, "root", root.Viewer())
	assert.Equal(t, uint64(3), root.ID())
	require.Equal(t, 1, root.Len())
	assert.Nil(t, root.Find("first"), "removed by addressee without case")
	assert.Same(t, ops.Find("second"), root.Find("second"), "one decoding for both")
	assert.NotSame(t, ops.Find("second"), alone.Find("second"), "control: without the cache, decoded apart")
	assert.Equal(t, *ops.Find("second"), *alone.Find("second"))
}

// A change is refused, and the state awaits a whole one, when it is
// another viewer's, does not follow, or leaves a state other than it
// names; the control is the same change applied in order, accepted.
func TestAChangeThatDoesNotFitTheStateIsRefused(t *testing.T) {
	ops := events(t, "ops")
	fresh := func() *bellstate.State {
		s := new(bellstate.State)
		require.NoError(t, s.Apply(ops[0], nil))
		return s
	}
	s := fresh()
	assert.NoError(t, s.Apply(ops[1], nil), "control: in order")

	s = fresh()
	err := s.Apply(events(t, "root")[1], nil)
	assert.ErrorContains(t, err, `a change of "root"'s state applied to "ops"'s`, "another viewer's change")
	assert.Zero(t, s.ID(), "awaits a whole state")

	s = fresh()
	var gap *bellstate.GapError
	assert.ErrorAs(t, s.Apply(ops[2], nil), &gap, "the change before it missed")
	assert.Zero(t, s.ID())

	s = fresh()
	wrong := bellstate.Event{Name: "change", ID: "2", Data: []byte(`{"viewer":"ops","unread":2,"count":2,"put":[],"remove":[]}`)}
	var mismatch *bellstate.MismatchError
	assert.ErrorAs(t, s.Apply(wrong, nil), &mismatch, "a change that leaves another state than it names")
	assert.Zero(t, s.ID())
}

// The splitter finds events however the bytes are cut, with their id and
// data (lines joined by newlines; a CR ending a line dropped), and names an event without
// a name "message", as EventSource does.
func TestTheSplitterFindsEventsWhereverTheBytesAreCut(t *testing.T) {
	stream := []byte("event: hello\ndata: {}\n\nid: 7\r\nevent: change\r\ndata: a\r\ndata: b\r\n\ndata: plain\n\n")
	for cut := range len(stream) + 1 {
		var sp bellstate.Splitter
		var got []string
		fn := func(ev bellstate.Event) error {
			got = append(got, fmt.Sprintf("%s|%s|%s", ev.Name, ev.ID, ev.Data))
			return nil
		}
		require.NoError(t, sp.Feed(stream[:cut], fn))
		require.NoError(t, sp.Feed(stream[cut:], fn))
		assert.Equal(t, []string{"hello||{}", "change|7|a\nb", "message||plain"}, got, "cut at %d", cut)
	}
}

// A change every admin shares (a broadcast), applied to thousands of
// states through one Cache, allocates nothing once decoded: no hashing,
// no case-folded key per notification, no growing map per state
// (bellload applies it to 10,000 states on the cores the bell writes
// on). Each state starts from a whole state of three notifications, so
// the fourth fits its slice. Negative control: the map-keyed State
// before (a lower-cased key built per put and lookup, the map grown at
// the same change in every state) allocated 3 times per apply here.
func TestApplyingASharedChangeToManyStatesAllocatesNothing(t *testing.T) {
	const n = 102 // AllocsPerRun runs once more than it counts
	var cache bellstate.Cache
	items := fmt.Sprintf(item, "a", "first", 1) + "," + fmt.Sprintf(item, "b", "second", 2) + "," + fmt.Sprintf(item, "c", "third", 3)
	put := fmt.Sprintf(item, "d", "fourth", 4)
	states := make([]bellstate.State, n)
	changes := make([]bellstate.Event, n)
	for i := range states {
		v := fmt.Sprintf("admin%05d", i)
		whole := bellstate.Event{Name: "bell", ID: "1", Data: []byte(`{"viewer":"` + v + `","unread":3,"groups":[{"source":"","items":[` + items + `]}]}`)}
		require.NoError(t, states[i].Apply(whole, &cache))
		changes[i] = bellstate.Event{Name: "change", ID: "2", Data: []byte(`{"viewer":"` + v + `","unread":4,"count":4,"put":[` + put + `],"remove":[]}`)}
	}
	require.NoError(t, states[0].Apply(changes[0], &cache)) // decoded once
	i := 1
	allocs := testing.AllocsPerRun(n-2, func() {
		if err := states[i].Apply(changes[i], &cache); err != nil {
			t.Error(err)
		}
		i++
	})
	assert.Zero(t, allocs, "allocations per state applying the shared change")
	for i := range states {
		assert.Equal(t, 4, states[i].Len(), "state %d", i)
		assert.Equal(t, 4, states[i].Unread(), "state %d", i)
		assert.Same(t, states[0].Find("fourth"), states[i].Find("fourth"), "state %d: one decoding", i)
	}
}
