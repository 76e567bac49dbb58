package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestReplaySubjectReplaysItsBufferThenTheEnding(t *testing.T) {
	s := rx.NewReplaySubject[int](2)
	for i := 1; i <= 4; i++ {
		s.OnNext(i)
	}
	assert.Equal(t, []int{3, 4}, rxtest.Record[int](nil, s).Values())
	s.OnCompleted()
	r := rxtest.Record[int](nil, s)
	assert.Equal(t, []int{3, 4}, r.Values())
	assert.True(t, r.Completed())
	all := rx.NewReplaySubject[int](0)
	all.OnNext(1)
	all.OnNext(2)
	assert.Equal(t, []int{1, 2}, rxtest.Record[int](nil, all).Values())
}
