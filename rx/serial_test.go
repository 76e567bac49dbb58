package rx_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
)

func TestOnErrorNilIsAFailureNotASuccess(t *testing.T) {
	s := rx.NewReplaySubject[int](0)
	s.OnError(nil)
	_, err := rx.First[int](context.Background(), s)
	assert.ErrorIs(t, err, rx.ErrNilError)

	_, err = rx.Collect(context.Background(), rx.Create(func(_ context.Context, o rx.Observer[int]) { o.OnNext(1); o.OnError(nil) }))
	assert.ErrorIs(t, err, rx.ErrNilError)

	_, err = rx.Collect(context.Background(), rx.Create(func(_ context.Context, o rx.Observer[int]) { o.OnNext(1); o.OnCompleted() }))
	assert.NoError(t, err, "control: a completion is a success")
}
