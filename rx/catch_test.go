package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func TestCatchContinuesWithTheHandlersObservable(t *testing.T) {
	var seen error
	rec := rxtest.Record(nil, rx.Catch(rx.Concat(rx.Of(1), rx.Throw[int](rxtest.ErrTest)), func(err error) rx.Observable[int] {
		seen = err
		return rx.Of(2, 3)
	}))
	assert.Equal(t, []int{1, 2, 3}, rec.Values())
	assert.True(t, rec.Completed())
	assert.ErrorIs(t, seen, rxtest.ErrTest)
	rethrown := rxtest.Record(nil, rx.Catch(rx.Throw[int](rxtest.ErrTest), func(error) rx.Observable[int] { return nil }))
	assert.ErrorIs(t, rethrown.Err(), rxtest.ErrTest)
}
