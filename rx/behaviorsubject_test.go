package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestBehaviorSubjectGivesTheLatestValueFirst(t *testing.T) {
	s := rx.NewBehaviorSubject(0)
	a := rxtest.Record[int](nil, s)
	s.OnNext(1)
	b := rxtest.Record[int](nil, s)
	s.OnNext(2)
	assert.Equal(t, []int{0, 1, 2}, a.Values())
	assert.Equal(t, []int{1, 2}, b.Values())
	assert.Equal(t, 2, s.Value())
	s.OnCompleted()
	c := rxtest.Record[int](nil, s)
	assert.Empty(t, c.Values(), "after completion only the completion")
	assert.True(t, c.Completed())
}
