package rx_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// groupLog subscribes to each group as it arrives and logs, in one list,
// "open k", "k:v" and "end k", with the outer's end as "end".
type groupLog struct {
	mu   sync.Mutex
	log  []string
	subs []rx.Subscription
}

func (l *groupLog) add(s string) { l.mu.Lock(); l.log = append(l.log, s); l.mu.Unlock() }

func (l *groupLog) observer() rx.Observer[rx.Group[int, int]] {
	return rx.NewObserver(func(g rx.Group[int, int]) {
		l.add(fmt.Sprintf("open %d", g.Key))
		l.subs = append(l.subs, g.Subscribe(rx.NewObserver(
			func(v int) { l.add(fmt.Sprintf("%d:%d", g.Key, v)) },
			func(error) { l.add(fmt.Sprintf("fail %d", g.Key)) },
			func() { l.add(fmt.Sprintf("end %d", g.Key)) })))
	}, func(error) { l.add("fail") }, func() { l.add("end") })
}

// After Rx.NET GroupByTest: a group opens just before its first value; at
// the source's end every group completes, in the order they opened, before
// the outer stream. Negative control: an error fails every group, then the
// outer stream.
func TestGroupByOpensAGroupPerKeyAndEndsThemBeforeItself(t *testing.T) {
	var l groupLog
	rx.GroupBy(rx.Of(1, 2, 3, 4, 5), func(v int) int { return v % 2 }).Subscribe(l.observer())
	assert.Equal(t, []string{"open 1", "1:1", "open 0", "0:2", "1:3", "0:4", "1:5", "end 1", "end 0", "end"}, l.log)

	var ctl groupLog
	rx.GroupBy(rx.Concat(rx.Of(1, 2), rx.Throw[int](rxtest.ErrTest)), func(v int) int { return v % 2 }).Subscribe(ctl.observer())
	assert.Equal(t, []string{"open 1", "1:1", "open 0", "0:2", "fail 1", "fail 0", "fail"}, ctl.log, "control")
}

// As in Rx.NET, unsubscribing the outer stream alone keeps the source for
// the groups still observed (no new group is announced). Negative control:
// unsubscribing the groups too unsubscribes the source at that moment.
func TestGroupByKeepsItsSourceWhileAGroupIsObserved(t *testing.T) {
	run := func(dropGroups bool) ([]string, []rxtest.Span) {
		clk := rxtest.NewClock()
		xs := rxtest.Hot(clk, rxtest.Next(ms(210), 1), rxtest.Next(ms(220), 2), rxtest.Next(ms(240), 3),
			rxtest.Next(ms(250), 4), rxtest.Next(ms(260), 7), rxtest.Completed[int](ms(300)))
		var l groupLog
		var outer rx.Subscription
		clk.Schedule(ms(200), func() {
			outer = rx.GroupBy[int](xs, func(v int) int { return v % 3 }).Subscribe(l.observer())
		})
		clk.Schedule(ms(230), func() {
			outer.Unsubscribe()
			if dropGroups {
				for _, s := range l.subs {
					s.Unsubscribe()
				}
			}
		})
		clk.AdvanceTo(ms(1000))
		return l.log, xs.Subscriptions()
	}
	log, spans := run(false)
	assert.Equal(t, []string{"open 1", "1:1", "open 2", "2:2", "1:4", "1:7", "end 1", "end 2"}, log)
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(300))}, spans)
	log, spans = run(true)
	assert.Equal(t, []string{"open 1", "1:1", "open 2", "2:2"}, log, "control")
	assert.Equal(t, []rxtest.Span{rxtest.Sub(ms(200), ms(230))}, spans, "control")
}

// At most GroupLimit groups. Negative control: exactly GroupLimit keys
// complete normally.
func TestGroupByFailsBeyondGroupLimitGroups(t *testing.T) {
	count := func(n int) (int, error) {
		groups := 0
		var err error
		rx.GroupBy(rx.Range(0, n), func(v int) int { return v }).Subscribe(rx.NewObserver(
			func(rx.Group[int, int]) { groups++ }, func(e error) { err = e }, nil))
		return groups, err
	}
	groups, err := count(rx.GroupLimit + 1)
	var oe *rx.OverflowError
	require.True(t, errors.As(err, &oe), "got %v", err)
	assert.Equal(t, "GroupBy", oe.Op)
	assert.Equal(t, rx.GroupLimit, groups)
	_, err = count(rx.GroupLimit)
	assert.NoError(t, err, "control")
}

// A panicking key function reaches the caller of the source's OnNext and
// loses that value only: the next values are grouped as before. Negative
// control: without the panic the value arrives in its group.
func TestAPanickingKeyFunctionLosesOnlyItsValue(t *testing.T) {
	run := func(panicOn int) []string {
		s := rx.NewSubject[int]()
		var l groupLog
		rx.GroupBy[int](s, func(v int) int {
			if v == panicOn {
				panic("key bug")
			}
			return v % 2
		}).Subscribe(l.observer())
		s.OnNext(1)
		p := recovered(func() { s.OnNext(3) })
		if panicOn == 3 {
			assert.Equal(t, "key bug", p)
		}
		s.OnNext(2)
		s.OnNext(5)
		s.OnCompleted()
		return l.log
	}
	assert.Equal(t, []string{"open 1", "1:1", "open 0", "0:2", "1:5", "end 1", "end 0", "end"}, run(3))
	assert.Equal(t, []string{"open 1", "1:1", "1:3", "open 0", "0:2", "1:5", "end 1", "end 0", "end"}, run(-1), "control")
}

// A group subscribed after the source ended gets its end at once (the
// group is a Subject). Negative control: subscribed before, it got the
// values too.
func TestAGroupSubscribedAfterTheEndGetsTheEnd(t *testing.T) {
	var groups []rx.Group[int, int]
	var early []int
	rx.GroupBy(rx.Of(1, 2, 3), func(v int) int { return v % 2 }).Subscribe(rx.NewObserver(func(g rx.Group[int, int]) {
		groups = append(groups, g)
		if g.Key == 1 {
			g.Subscribe(rx.NewObserver(func(v int) { early = append(early, v) }, nil, nil))
		}
	}, nil, nil))
	require.Len(t, groups, 2)
	late := rxtest.Record(nil, rx.Observable[int](groups[0]))
	assert.True(t, late.Completed())
	assert.Empty(t, late.Values())
	assert.Equal(t, []int{1, 3}, early, "control")
}

// A panic out of one group's observer as GroupBy ends goes on to the
// caller once every other group has ended too, and releases the source:
// once the outer subscription ends nothing is left subscribed. (GroupBy
// ends here on its own error, an uncomparable key: a source that ends
// itself would end its own subscription.) Negative control (run): with
// the groups ended in a plain loop, the source cancelled after it and
// pinRef releasing after its observer's end, the groups after the
// panicking one never ended and the source stayed subscribed.
func TestAPanicOutOfAGroupsEndEndsTheOtherGroupsAndLeavesNothingSubscribed(t *testing.T) {
	var sctx context.Context
	var src rx.Observer[int]
	create := rx.Create(func(ctx context.Context, o rx.Observer[int]) { sctx, src = ctx, o })
	key := func(v int) any {
		if v == 99 {
			return []int{v} // uncomparable: GroupBy fails
		}
		return v
	}
	ended := map[any]bool{}
	sub := rx.GroupBy(create, key).Subscribe(rx.NewObserver(func(g rx.Group[any, int]) {
		end := func() {
			ended[g.Key] = true
			if g.Key == 1 {
				panic("boom")
			}
		}
		g.Subscribe(rx.NewObserver(func(int) {}, func(error) { end() }, end))
	}, nil, nil))
	require.NotNil(t, src)
	for _, v := range []int{1, 2, 3} {
		src.OnNext(v)
	}
	assert.Equal(t, "boom", recovered(func() { src.OnNext(99) }))
	assert.Equal(t, map[any]bool{1: true, 2: true, 3: true}, ended, "every group ended")
	sub.Unsubscribe()
	assert.Error(t, sctx.Err(), "the source is still subscribed")
}

// Once the outer subscription has ended nobody can see a new group, so a
// value of a new key opens none: the groups still observed go on to the
// source's end, however many other keys follow, and nothing is held for
// those keys. Negative control (run): with such groups opened as before,
// the GroupLimit+1-th key failed the observed group with an
// *OverflowError naming groups nobody could have observed.
func TestAGroupObservedAfterTheOuterEndedIsNotFailedByKeysNobodyCanSee(t *testing.T) {
	s := rx.NewSubject[int]()
	var group *rxtest.Recorder[int]
	outer := rx.GroupBy[int](s, func(v int) int { return v }).Subscribe(rx.NewObserver(func(g rx.Group[int, int]) {
		if g.Key == 0 {
			group = rxtest.Record(nil, rx.Observable[int](g))
		}
	}, nil, nil))
	s.OnNext(0)
	outer.Unsubscribe()
	for k := 1; k <= rx.GroupLimit+1; k++ {
		s.OnNext(k)
	}
	s.OnNext(0)
	s.OnCompleted()
	require.NotNil(t, group)
	require.NoError(t, group.Err())
	assert.Equal(t, []int{0, 0}, group.Values())
	assert.True(t, group.Completed())
}
