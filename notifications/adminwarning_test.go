package notifications_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

// warnings is a slog handler (the seam every user of Service.Logger has)
// that keeps the messages of the WARN records it receives.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *warnings) WithGroup(string) slog.Handler            { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		w.mu.Lock()
		w.msgs = append(w.msgs, r.Message)
		w.mu.Unlock()
	}
	return nil
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// stalledAdmins is an Admins that answers only when its context ends.
func stalledAdmins(asked chan<- struct{}) notifications.GlobalAdmins {
	return notifications.GlobalAdminsFunc(func(ctx context.Context, _ string) access.Decision {
		asked <- struct{}{}
		<-ctx.Done()
		return access.Undetermined
	})
}

// A viewer who leaves while the admin check is still waiting is not a
// failure of the check: nobody is left to see the bell, so nothing is
// logged. The bell's goroutine, which logs the warning if any, is waited
// for before the log is read.
//
// Negative control: with Unsubscribe cancelling the bell's context without
// its cause (b.cancel(nil)), the check logs "could not tell whether the
// viewer is a global admin" with cause "context canceled" and this test
// fails, as it did when run so.
func TestAViewerLeavingDuringTheAdminCheckIsNotWarnedAbout(t *testing.T) {
	fx := newMem(t)
	log := &warnings{}
	asked := make(chan struct{}, 1)
	svc := fx.service()
	svc.Logger = slog.New(log)
	svc.Admins = stalledAdmins(asked)

	sub := svc.Bell("root").Subscribe(rx.NewObserver(
		func(notifications.BellState) {}, func(error) {}, func() {}))
	select {
	case <-asked:
	case <-time.After(convergence):
		require.FailNow(t, "the admin check was not asked")
	}
	sub.Unsubscribe()
	awaitNoGoroutineIn(t, "notifications.(*bell).open")
	assert.Empty(t, log.all())
}

// The budget tripping is a failure to decide, and is still warned about.
// This is the control of the test above: the same setup, with the check
// ended by its budget instead of by Unsubscribe, logs the warning.
func TestAnAdminCheckCutOffByItsBudgetIsStillWarnedAbout(t *testing.T) {
	fx := newMem(t)
	log := &warnings{}
	asked := make(chan struct{}, 1)
	svc := fx.service()
	svc.Logger = slog.New(log)
	svc.Admins = stalledAdmins(asked)

	sub := svc.Bell("root").Subscribe(rx.NewObserver(
		func(notifications.BellState) {}, func(error) {}, func() {}))
	defer sub.Unsubscribe()
	select {
	case <-asked:
	case <-time.After(convergence):
		require.FailNow(t, "the admin check was not asked")
	}
	fx.clk.Advance(mesh.DefaultBudgets().Permission)
	awaitNoGoroutineIn(t, "notifications.(*bell).open")
	msgs := log.all()
	require.Len(t, msgs, 1)
	assert.True(t, strings.HasPrefix(msgs[0], "notifications: could not tell whether the viewer is a global admin"), msgs[0])
}
