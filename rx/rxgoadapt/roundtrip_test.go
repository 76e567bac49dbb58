package rxgoadapt_test

import (
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxgoadapt"
	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Every expectation below is the source's own definition, so a value that is
// lost, duplicated, reordered or retyped on the way fails the comparison.

func TestValuesAndErrorsRoundTripFromRxThroughRxGoAndBack(t *testing.T) {
	ctx := boundedCtx(t)
	src := rx.Of(3, 1, 4, 1, 5, 9, 2, 6)
	vs, err := rx.Collect(ctx, rxgoadapt.FromRxGoOf[int](rxgoadapt.ToRxGo(src)))
	require.NoError(t, err)
	assert.Equal(t, []int{3, 1, 4, 1, 5, 9, 2, 6}, vs)

	failing := rx.Concat(rx.Of("a", "b"), rx.Throw[string](errBoom))
	vss, err := rx.Collect(ctx, rxgoadapt.FromRxGoOf[string](rxgoadapt.ToRxGo(failing)))
	assert.Equal(t, []string{"a", "b"}, vss)
	assert.Same(t, errBoom, err)
	goleak.VerifyNone(t)
}

func TestValuesAndErrorsRoundTripFromRxGoThroughRxAndBack(t *testing.T) {
	ctx := boundedCtx(t)
	src := rxgo.Just(3, 1, 4, 1, 5)()
	vs, errs := readRxGo(t, rxgoadapt.ToRxGo(rxgoadapt.FromRxGo(src)).Observe(rxgo.WithContext(ctx)))
	assert.Empty(t, errs)
	assert.Equal(t, []any{3, 1, 4, 1, 5}, vs)

	failing := rxgo.Defer([]rxgo.Producer{sendItems(rxgo.Of("a"), rxgo.Error(errBoom), rxgo.Of("never"))})
	vs, errs = readRxGo(t, rxgoadapt.ToRxGo(rxgoadapt.FromRxGo(failing)).Observe(rxgo.WithContext(ctx)))
	assert.Equal(t, []any{"a"}, vs)
	require.Len(t, errs, 1)
	assert.Same(t, errBoom, errs[0])
	goleak.VerifyNone(t)
}
