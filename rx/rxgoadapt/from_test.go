package rxgoadapt_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxgoadapt"
	"github.com/reactivex/rxgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

var errBoom = errors.New("boom")

func TestAnItemOfTheWrongTypeEndsTheStreamWithATypeErrorNotAPanic(t *testing.T) {
	ctx := boundedCtx(t)
	cases := []struct {
		name  string
		items []rxgo.Item
		want  []int
		error rxgoadapt.TypeError
	}{
		{"a string among ints", []rxgo.Item{rxgo.Of(1), rxgo.Of("two"), rxgo.Of(3)}, []int{1}, rxgoadapt.TypeError{Want: "int", Got: "string", Index: 1}},
		{"a nil value", []rxgo.Item{rxgo.Of(nil)}, nil, rxgoadapt.TypeError{Want: "int", Got: "<nil>", Index: 0}},
		{"an int64 is not an int", []rxgo.Item{rxgo.Of(7), rxgo.Of(8), rxgo.Of(int64(9))}, []int{7, 8}, rxgoadapt.TypeError{Want: "int", Got: "int64", Index: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := rxgo.Defer([]rxgo.Producer{sendItems(c.items...)})

			vs, err := rx.Collect(ctx, rxgoadapt.FromRxGoOf[int](src))
			assert.Equal(t, c.want, vs)
			var te *rxgoadapt.TypeError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, c.error, *te)

			// Negative control: untyped, the same items all pass and the
			// stream completes, so the error above is the type check's.
			all, err := rx.Collect(ctx, rxgoadapt.FromRxGo(src))
			require.NoError(t, err)
			assert.Len(t, all, len(c.items))
			goleak.VerifyNone(t)
		})
	}
}

func TestANilItemValueIsOnlyAValueOfAnInterfaceType(t *testing.T) {
	ctx := boundedCtx(t)
	src := rxgo.Defer([]rxgo.Producer{sendItems(rxgo.Of(nil), rxgo.Of(errBoom))})

	errs, err := rx.Collect(ctx, rxgoadapt.FromRxGoOf[error](src))
	require.NoError(t, err)
	assert.Equal(t, []error{nil, errBoom}, errs)

	// Negative control: for a pointer type the same nil is a type error.
	_, err = rx.Collect(ctx, rxgoadapt.FromRxGoOf[*int](src))
	var te *rxgoadapt.TypeError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, rxgoadapt.TypeError{Want: "*int", Got: "<nil>", Index: 0}, *te)
	goleak.VerifyNone(t)
}

func TestUnsubscribingStopsAnEndlessRxGoSource(t *testing.T) {
	ctx := boundedCtx(t)
	endless := func(exited chan struct{}) rxgo.Observable {
		return rxgo.Defer([]rxgo.Producer{func(ctx context.Context, next chan<- rxgo.Item) {
			defer close(exited)
			for i := 0; rxgo.Of(i).SendContext(ctx, next); i++ {
			}
		}})
	}

	t.Run("Take ends the subscription", func(t *testing.T) {
		exited := make(chan struct{})
		vs, err := rx.Collect(ctx, rx.Take(rxgoadapt.FromRxGoOf[int](endless(exited)), 5))
		require.NoError(t, err)
		assert.Equal(t, []int{0, 1, 2, 3, 4}, vs)
		waitClosed(t, exited, "the rxgo producer to return after Take unsubscribed")
		goleak.VerifyNone(t)
	})

	t.Run("Unsubscribe ends a live subscription", func(t *testing.T) {
		exited := make(chan struct{})
		got, quit := make(chan int), make(chan struct{})
		sub := rxgoadapt.FromRxGoOf[int](endless(exited)).Subscribe(rx.NewObserver(func(v int) {
			select {
			case got <- v:
			case <-quit:
			}
		}, nil, nil))
		// Negative control: while subscribed, the source keeps producing; it
		// is the Unsubscribe below that stops it, not the source running dry.
		for want := range 10 {
			require.Equal(t, want, receive(t, got, "the next value"))
		}
		select {
		case <-exited:
			t.Fatal("the rxgo producer returned while the subscription was live")
		default:
		}
		sub.Unsubscribe()
		close(quit)
		waitClosed(t, exited, "the rxgo producer to return after Unsubscribe")
		goleak.VerifyNone(t)
	})
}

func TestAnRxGoErrorItemEndsTheStreamEvenUnderContinueOnError(t *testing.T) {
	ctx := boundedCtx(t)
	identity := func(_ context.Context, v any) (any, error) { return v, nil }
	src := rxgo.Defer([]rxgo.Producer{sendItems(rxgo.Of(1), rxgo.Error(errBoom), rxgo.Of(2))}).
		Map(identity, rxgo.WithErrorStrategy(rxgo.ContinueOnError))

	// Negative control: rxgo itself carries on after the error.
	rvs, rerrs := readRxGo(t, src.Observe(rxgo.WithContext(ctx)))
	require.Equal(t, []any{1, 2}, rvs)
	require.Equal(t, []error{errBoom}, rerrs)

	vs, err := rx.Collect(ctx, rxgoadapt.FromRxGoOf[int](src))
	assert.Equal(t, []int{1}, vs)
	assert.Same(t, errBoom, err, "the rxgo error is passed on unchanged")
	goleak.VerifyNone(t)
}

func TestRetryOverFromRxGoResubscribesAColdRxGoSource(t *testing.T) {
	ctx := boundedCtx(t)
	// failTwice fails its first two runs and then answers.
	failTwice := func(runs *atomic.Int32) rxgo.Producer {
		return func(ctx context.Context, next chan<- rxgo.Item) {
			if runs.Add(1) <= 2 {
				rxgo.Error(errBoom).SendContext(ctx, next)
				return
			}
			rxgo.Of("ok").SendContext(ctx, next)
		}
	}

	var runs atomic.Int32
	vs, err := rx.Collect(ctx, rx.Retry(rxgoadapt.FromRxGoOf[string](rxgo.Defer([]rxgo.Producer{failTwice(&runs)})), 3))
	require.NoError(t, err)
	assert.Equal(t, []string{"ok"}, vs)
	assert.Equal(t, int32(3), runs.Load(), "each attempt ran the rxgo producer afresh")

	// Negative control: one attempt fewer, and the last error wins.
	runs.Store(0)
	_, err = rx.Collect(ctx, rx.Retry(rxgoadapt.FromRxGoOf[string](rxgo.Defer([]rxgo.Producer{failTwice(&runs)})), 2))
	assert.ErrorIs(t, err, errBoom)
	assert.Equal(t, int32(2), runs.Load())

	// Negative control: rxgo.Create runs its producer once, at construction,
	// so the second attempt reads a closed channel and completes empty.
	runs.Store(0)
	vs, err = rx.Collect(ctx, rx.Retry(rxgoadapt.FromRxGoOf[string](rxgo.Create([]rxgo.Producer{failTwice(&runs)})), 3))
	require.NoError(t, err)
	assert.Empty(t, vs)
	assert.Equal(t, int32(1), runs.Load())
	goleak.VerifyNone(t)
}

func TestANilObservableIsAnErrorValueEitherWay(t *testing.T) {
	ctx := boundedCtx(t)
	_, err := rx.Collect(ctx, rxgoadapt.FromRxGo(nil))
	assert.ErrorIs(t, err, rxgoadapt.ErrNilObservable)
	_, err = rx.Collect(ctx, rxgoadapt.FromRxGoOf[int](nil))
	assert.ErrorIs(t, err, rxgoadapt.ErrNilObservable)

	vs, errs := readRxGo(t, rxgoadapt.ToRxGo[int](nil).Observe(rxgo.WithContext(ctx)))
	assert.Empty(t, vs)
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], rxgoadapt.ErrNilObservable)
	goleak.VerifyNone(t)
}
