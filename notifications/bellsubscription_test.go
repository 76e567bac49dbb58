package notifications_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

// The bell is its own operator (no rx.Create chain), so it keeps the rx
// contract itself: Unsubscribe returns while the observer is blocked in
// OnNext, and once it has returned no notification starts. Here the
// observer is blocked by an Admin broadcast (on the fan-out's goroutine);
// a second broadcast reaches the bell meanwhile (its state is due: another
// admin's bell has it, and the shared read hands a change to every bell
// before it delivers to any), then
// the subscriber unsubscribes and the observer is let go: the due state is
// not delivered. The fan-out's goroutine is waited for (it ends once its
// delivery loop has), not slept on.
//
// Negative control: without the bell's check of its subscription before
// each notification (deliver without "b.released ||"), the state holding
// "second" is delivered after Unsubscribe returned and this test fails, as
// it did when run so.
func TestNoBellNotificationStartsOnceUnsubscribeHasReturned(t *testing.T) {
	fx := newMem(t)
	svc := &notifications.Service{Mesh: fx.store, Clock: fx.clk, Admins: adminsByName()}
	var mu sync.Mutex
	var seen [][]string
	blocked := make(chan struct{})
	release := make(chan struct{})
	sub := svc.Bell("admin1").Subscribe(rx.NewObserver(func(s notifications.BellState) {
		mu.Lock()
		seen = append(seen, titles(s))
		mu.Unlock()
		if slices.Contains(titles(s), "first") && !slices.Contains(titles(s), "second") {
			close(blocked)
			<-release
		}
	}, func(err error) { t.Error(err) }, func() { t.Error("completed after Unsubscribe") }))
	other := watch(t, svc.Bell("admin2")) // tells when the shared read has handed a broadcast to every bell
	other.await(t, "the other admin's first state", func(notifications.BellState) bool { return true })
	create(t, svc, "first", "", notifications.Admin)
	select {
	case <-blocked:
	case <-time.After(convergence):
		t.Fatal("the state holding the first broadcast never reached the observer")
	}
	create(t, svc, "second", "", notifications.Admin)
	// The shared read sets every bell's state before it delivers any, so
	// once the other admin has it, admin1's is due (its observer is busy).
	other.await(t, "the second broadcast", has("second"))
	sub.Unsubscribe() // returns while OnNext is still blocked
	close(release)
	awaitNoGoroutineIn(t, "notifications.(*fanOut).work")
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	for _, s := range seen {
		assert.NotContains(t, s, "second", "a state delivered after Unsubscribe returned: %v", seen)
	}
}

// awaitNoGoroutineIn waits, within convergence, until no goroutine is in
// fn.
func awaitNoGoroutineIn(t *testing.T, fn string) {
	t.Helper()
	deadline := time.Now().Add(convergence)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if !strings.Contains(string(buf[:n]), fn) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a goroutine is still in %s after %v", fn, convergence)
		}
		runtime.Gosched()
	}
}

// failingLeg is a real store whose reads of one query fail after their
// first frame.
type failingLeg struct {
	mesh.Store
	q   string
	err error
}

func (f failingLeg) Query(q string) rx.Observable[mesh.Change] {
	if q != f.q {
		return f.Store.Query(q)
	}
	return rx.Concat(rx.Take(f.Store.Query(q), 1), rx.Throw[mesh.Change](f.err))
}

// A bell's legs are released right after its terminal notification (as
// rx.Finally released them), not when its subscriber gets round to
// unsubscribing: here the viewer's own leg fails, and the shared Admin
// read, which the failed bell was the last to hold, closes at once.
//
// Negative control: without the release after the terminal notification
// (deliver not calling Unsubscribe), the Admin read stays open (1 live
// query) and this test fails, as it did when run so.
func TestABellThatFailedReleasesItsLiveReadsAtOnce(t *testing.T) {
	fx := newMem(t)
	store := fx.store.(*memstore.Store)
	boom := errors.New("the viewer's leg failed")
	svc := &notifications.Service{Mesh: failingLeg{Store: fx.store, q: notifications.BellQuery("admin1"), err: boom},
		Clock: fx.clk, Admins: adminsByName()}
	w := watch(t, svc.Bell("admin1"))
	deadline := time.After(convergence)
	var err error
	for done := false; !done; {
		select {
		case <-w.signal:
		case <-deadline:
			t.Fatal("the bell did not end within the bound")
		}
		w.mu.Lock()
		done, err = w.done, w.err
		w.mu.Unlock()
	}
	require.ErrorIs(t, err, boom)
	assert.Zero(t, store.Stats().LiveQueries, "the Admin read is released with the failed bell")
}

// A subscriber whose context ends while the global admin check is stalled
// gets its answer at once — the check's budget (Budgets.Permission, on the
// virtual clock) is not waited for — and the check's own context ends with
// the subscription: rx.First and rx.Collect, each with a context ending on
// the virtual clock well before the budget.
//
// Negative control: with Subscribe opening the bell on the calling
// goroutine under context.Background() (dd438d6), First and Collect stay
// inside Subscribe, so they cannot unsubscribe when their context ends:
// run so, both failed ("rx.First is still blocked 15s after its context
// ended (the virtual clock at 6.666666666s, the budget 20s)").
func TestABellSubscriberWhoseContextEndsReturnsWhileTheAdminCheckIsStalled(t *testing.T) {
	for name, read := range map[string]func(context.Context, rx.Observable[notifications.BellState]) error{
		"rx.First": func(ctx context.Context, bell rx.Observable[notifications.BellState]) error {
			_, err := rx.First(ctx, bell)
			return err
		},
		"rx.Collect": func(ctx context.Context, bell rx.Observable[notifications.BellState]) error {
			_, err := rx.Collect(ctx, bell)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			fx := newMem(t)
			asked := make(chan struct{})
			causes := make(chan error, 1)
			svc := fx.service()
			svc.Admins = notifications.GlobalAdminsFunc(func(ctx context.Context, _ string) access.Decision {
				close(asked)
				<-ctx.Done() // a permission read that is stalled
				causes <- context.Cause(ctx)
				return access.Undetermined
			})
			budget := mesh.DefaultBudgets().Permission
			wait := budget / 3
			ctx, cancel := fx.clk.WithTimeout(context.Background(), wait)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- read(ctx, svc.Bell("root")) }()
			select {
			case <-asked:
			case <-time.After(convergence):
				t.Fatal("the admin check was never asked")
			}
			fx.clk.Advance(wait) // the subscriber's context ends; the budget is far off
			select {
			case err := <-done:
				require.ErrorIs(t, err, context.DeadlineExceeded)
			case <-time.After(convergence):
				t.Fatalf("%s is still blocked %v after its context ended (the virtual clock at %v, the budget %v)",
					name, convergence, fx.clk.Elapsed(), budget)
			}
			select {
			case cause := <-causes:
				var timeout *rx.TimeoutError
				assert.False(t, errors.As(cause, &timeout), "the check ran to its budget: %v", cause)
			case <-time.After(convergence):
				t.Fatal("the admin check did not end with the subscription")
			}
		})
	}
}
