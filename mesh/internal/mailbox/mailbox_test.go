package mailbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collect drains m on the calling goroutine, recording what it delivers.
func collect(m *Mailbox[int], gap int) (got []int, completed bool) {
	m.Drain(func(v int) { got = append(got, v) }, func() []int {
		m.Reset()
		return []int{gap}
	}, func() { completed = true }, func(p any, _ []byte) { panic(p) })
	return got, completed
}

func TestOnlyTheFirstPushOfAnIdleMailboxStartsADrain(t *testing.T) {
	m := &Mailbox[int]{Bound: 4}
	assert.True(t, m.Push(1), "an idle mailbox needs a drain")
	assert.False(t, m.Push(2), "a drain is already due: no second one")
	got, completed := collect(m, -1)
	assert.Equal(t, []int{1, 2}, got)
	assert.False(t, completed)
	assert.True(t, m.Push(3), "a drained mailbox is idle again") // the control
}

func TestAMailboxPastItsBoundDeliversOneCollapsedValueForWhatItDropped(t *testing.T) {
	m := &Mailbox[int]{Bound: 2}
	for v := range 5 {
		m.Push(v)
	}
	settled := m.Settled()
	require.NotNil(t, settled, "five pushes are not delivered yet")
	got, _ := collect(m, -1)
	assert.Equal(t, []int{-1}, got, "the queue collapsed: one value stands for all five")
	_, err := AwaitAll(context.Background(), []<-chan struct{}{settled})
	assert.NoError(t, err, "the collapsed value settles every push it covers")

	m.Push(7)
	got, _ = collect(m, -1)
	assert.Equal(t, []int{7}, got, "within the bound, values pass as they are") // the control
}

func TestEndCompletesAfterWhatIsQueuedAndLeaveDeliversNothingMore(t *testing.T) {
	m := &Mailbox[int]{Bound: 4}
	m.Push(1)
	m.End()
	assert.False(t, m.Push(2), "nothing is queued after the end")
	got, completed := collect(m, -1)
	assert.Equal(t, []int{1}, got)
	assert.True(t, completed)

	left := &Mailbox[int]{Bound: 4}
	left.Push(1)
	left.Leave()
	got, completed = collect(left, -1)
	assert.Empty(t, got)
	assert.False(t, completed, "a subscriber that left is not completed either")
	assert.Nil(t, left.Settled(), "nothing is owed to a subscriber that left")
}

func TestAwaitAllSaysHowManyWereStillOpenWhenItsContextEnds(t *testing.T) {
	open, closed := make(chan struct{}), make(chan struct{})
	close(closed)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n, err := AwaitAll(ctx, []<-chan struct{}{open, closed})
	assert.Equal(t, 2, n)
	assert.ErrorIs(t, err, context.Canceled)
	n, err = AwaitAll(context.Background(), []<-chan struct{}{closed}) // the control
	assert.Zero(t, n)
	assert.NoError(t, err)
}

// A panic in a delivery has no caller on a drain's goroutine: Drain hands
// it to failed and stops all delivery, releasing whoever waits to settle.
// Negative control, run by hand: without Drain's recover the panic went
// up through Drain (this test failed with "observer bug"), and on a
// store's own goroutine it ended the process.
func TestADeliveryThatPanicsEndsOnlyThatMailboxAndReleasesItsWaiters(t *testing.T) {
	m := &Mailbox[int]{Bound: 4}
	m.Push(1)
	m.Push(2)
	settled := m.Settled()
	var got []int
	var failedWith any
	assert.NotPanics(t, func() {
		m.Drain(func(v int) {
			got = append(got, v)
			panic("observer bug")
		}, func() []int { return nil }, func() {}, func(p any, stack []byte) {
			failedWith = p
			assert.NotEmpty(t, stack)
		})
	})
	assert.Equal(t, []int{1}, got, "nothing is delivered after the panic")
	assert.Equal(t, "observer bug", failedWith)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := AwaitAll(ctx, []<-chan struct{}{settled})
	assert.NoError(t, err, "a waiter to settle is released")
	assert.False(t, m.Push(3), "the mailbox takes nothing more: no drain is started")
	assert.Nil(t, m.Settled())
}
