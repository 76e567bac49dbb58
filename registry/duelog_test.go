package registry

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The line saying why a read re-derives the snapshot says what that read
// decided from: at Info, on the Reconcile cadence, while the journal's tail
// covers the snapshot; at Warn, within Freshness and naming the tail's
// failure, once the tail no longer covers it. Each case is the other's
// control: the same reads, the journal readable or not. Negative control:
// deciding the level from journalCovers alone (without the tail's age, as
// a second reading of the state could) logs the failing case at Info.
func TestTheReDerivationLineSaysWhetherTheJournalsTailCoveredTheSnapshot(t *testing.T) {
	const reconcile = 2 * time.Minute
	for _, c := range []struct {
		name   string
		blind  bool
		level  slog.Level
		covers bool
	}{
		{"tail healthy", false, slog.LevelInfo, true},
		{"tail failing", true, slog.LevelWarn, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			blind := &blindVolume{failingScans{Volume: landing.DirVolume(t.TempDir())}}
			l := newLanding(t, blind, landing.Options{Replica: "a"})
			land(t, l, "Alpha", "1.0.0")
			clk := rxtest.NewClock()
			logs, logger := testkit.CaptureLogs()
			s := NewServedActivation(l, ServedOptions{Clock: clk, Logger: logger, Reconcile: reconcile})
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
				defer cancel()
				require.NoError(t, s.Close(ctx))
			})
			read(t, s)
			settle(t, s)
			blind.on.Store(c.blind)

			lines := func() []testkit.Record {
				var out []testkit.Record
				for _, r := range logs.All() {
					if strings.HasPrefix(r.Message, "registry: re-deriving the activation") {
						out = append(out, r)
					}
				}
				return out
			}
			for len(lines()) == 0 && clk.Elapsed() <= reconcile+s.maintPeriod {
				clk.Advance(s.maintPeriod)
				if c.blind {
					eventually(t, func() bool { return strings.Contains(s.tailState(), "failing") }, "the tail failing")
				} else {
					tailedNow(t, s, clk)
				}
				read(t, s)
				settle(t, s)
			}
			got := lines()
			require.NotEmpty(t, got, "a re-derivation within %s", clk.Elapsed())
			assert.Equal(t, c.level, got[0].Level, got[0].Message)
			assert.Equal(t, c.covers, got[0].Attrs["journalCovers"].Bool())
			if c.blind {
				assert.LessOrEqual(t, clk.Elapsed(), s.Freshness()+s.maintPeriod, "due at Freshness")
				assert.Contains(t, got[0].Attrs, "tailFailure")
				return
			}
			assert.Greater(t, clk.Elapsed(), s.Freshness(), "due on the Reconcile cadence, not at Freshness")
			assert.NotContains(t, got[0].Attrs, "tailFailure")
		})
	}
}
