package registry

import (
	"context"
	"errors"
	"io/fs"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/registry/landing/volumetest"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// recordsOutage fails the listing of one module's records while on, as a
// share or a bucket that errs on some requests during a short outage.
type recordsOutage struct {
	landing.Volume
	records string // the records directory that fails
	on      atomic.Bool
}

func (v *recordsOutage) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if v.on.Load() && name == v.records {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("input/output error")}
	}
	return v.Volume.ReadDir(ctx, name)
}

// A record another replica commits is served here within Freshness even
// when this replica's journal tail met an outage re-reading its module
// (and the full derivation that failure starts met it too): the round
// fails and the module stays pending, re-read by the next rounds, instead
// of being passed over with the round reported healthy, which left the
// record unserved until the Reconcile cadence (5 min) while /readyz said
// ready. Control run (absorbJournal passing over the failed re-read, as
// before): the record is not served 25 s later, on both volumes.
func TestARecordWhoseReReadByTheJournalTailFailsIsServedWithinFreshnessOnceTheVolumeAnswers(t *testing.T) {
	volumetest.ForEach(t, func(t *testing.T, k volumetest.Kind) {
		inner, replica := k.Open(t)
		outage := &recordsOutage{Volume: inner, records: "modules/late/records"}
		lb := newLanding(t, volumetest.KeepExclusive(outage, inner), landing.Options{Replica: "b"})
		la := newLanding(t, replica(), landing.Options{Replica: "a"})
		land(t, la, "Seed", "1.0.0")
		clk := rxtest.NewClock()
		b := NewServedActivation(lb, ServedOptions{Clock: clk, Logger: quietLogger()})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
			defer cancel()
			require.NoError(t, b.Close(ctx))
		})
		read(t, b)
		settle(t, b)
		tailedNow(t, b, clk)

		outage.on.Store(true)
		land(t, la, "Late", "1.0.0") // committed on the volume; no feed here
		clk.Advance(b.journalPeriod)
		eventually(t, func() bool { return b.Derivations() == 2 }, "the derivation the failed re-read starts")
		settle(t, b) // it fails too: the outage goes on
		require.NotContains(t, servedVersions(read(t, b).Activation()), "Late", "not served during the outage")

		outage.on.Store(false)
		for elapsed := b.journalPeriod; elapsed+b.journalPeriod < b.Freshness(); elapsed += b.journalPeriod {
			clk.Advance(b.journalPeriod)
			tailedNow(t, b, clk)
			settle(t, b)
		}
		require.Less(t, clk.Elapsed(), b.Freshness())
		assert.Equal(t, "1.0.0", servedVersions(read(t, b).Activation())["Late"],
			"served within Freshness (%s) of its commit, %s later", b.Freshness(), clk.Elapsed())
	})
}
