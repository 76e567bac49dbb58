package rxgoadapt_test

import (
	"context"
	"testing"
	"time"

	"github.com/reactivex/rxgo/v2"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitBudget bounds every wait for another goroutine in these tests. It is a
// safety net: each of those waits normally ends at once.
const waitBudget = 5 * time.Second

func boundedCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBudget)
	t.Cleanup(cancel)
	return ctx
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	timer := time.NewTimer(waitBudget)
	defer timer.Stop()
	select {
	case <-ch:
	case <-timer.C:
		t.Fatalf("waited %v for %s", waitBudget, what)
	}
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(waitBudget)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("waited %v for %s", waitBudget, what)
	}
	var zero T
	return zero
}

// readRxGo reads an rxgo channel until it closes, within the wait budget.
func readRxGo(t *testing.T, items <-chan rxgo.Item) (vs []any, errs []error) {
	t.Helper()
	timer := time.NewTimer(waitBudget)
	defer timer.Stop()
	for {
		select {
		case it, ok := <-items:
			if !ok {
				return vs, errs
			}
			if it.E != nil {
				errs = append(errs, it.E)
			} else {
				vs = append(vs, it.V)
			}
		case <-timer.C:
			t.Fatalf("waited %v for an rxgo channel to close; read %v %v so far", waitBudget, vs, errs)
		}
	}
}

// sendItems is an rxgo.Defer producer sending items in order.
func sendItems(items ...rxgo.Item) rxgo.Producer {
	return func(ctx context.Context, next chan<- rxgo.Item) {
		for _, it := range items {
			if !it.SendContext(ctx, next) {
				return
			}
		}
	}
}
