package landing

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// heldRecordReads holds every read of a module's records directory until
// released, counting how many are held at once.
type heldRecordReads struct {
	Volume
	gate    *testkit.Releaser
	entered chan struct{}
	holding bool

	mu        sync.Mutex
	now, most int
}

func (h *heldRecordReads) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	h.mu.Lock()
	hold := h.holding && strings.HasSuffix(name, "/records") && !strings.Contains(name, "/request")
	if hold {
		h.now++
		h.most = max(h.most, h.now)
	}
	h.mu.Unlock()
	if hold {
		h.entered <- struct{}{}
		h.gate.Wait(ctx)
		h.mu.Lock()
		h.now--
		h.mu.Unlock()
	}
	return h.Volume.ReadDir(ctx, name)
}

func TestADerivationReadsModulesInParallelAndLeavesARequestAReadSlot(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		for _, pool := range []int{4, 1} {
			t.Run(fmt.Sprintf("ReadPool %d", pool), func(t *testing.T) {
				inner := k.openVolume(t)
				h := &heldRecordReads{Volume: inner, gate: testkit.NewReleaser(t), entered: make(chan struct{}, 64)}
				l := newLanding(t, keepExclusive(h, inner), Options{ReadPool: pool})
				for i := range 12 {
					_, err := l.Land(context.Background(), fmt.Sprintf("Mod%02d", i), "1.0.0", testkit.ModuleArchive(t, "m", "1.0.0", 1))
					require.NoError(t, err)
				}
				_, err := l.Land(context.Background(), "Request", "1.0.0", testkit.ModuleArchive(t, "m", "1.0.0", 1))
				require.NoError(t, err)
				h.mu.Lock()
				h.holding = true
				h.mu.Unlock()

				done := make(chan Activation, 1)
				go func() {
					act, err := l.Activation(context.Background())
					assert.NoError(t, err)
					done <- act
				}()
				workers := max(pool-1, 1)
				for range workers {
					testkit.Receive(t, h.entered, "a derivation worker reading a module")
				}
				h.mu.Lock()
				most := h.most
				h.mu.Unlock()
				assert.Equal(t, workers, most, "ReadPool-1 modules read at once")

				if pool > 1 {
					// A request's read gets the slot the derivation leaves free,
					// while every worker is held.
					ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
					rec, found, err := l.Latest(ctx, "Request")
					cancel()
					require.NoError(t, err)
					require.True(t, found)
					assert.Equal(t, "1.0.0", rec.Version)
				} else {
					// Negative control: with one slot the derivation's worker
					// holds it, and a request waits (here: gives up).
					ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
					_, _, err := l.Latest(ctx, "Request")
					cancel()
					var we *WaitError
					require.ErrorAs(t, err, &we)
					assert.Equal(t, "the read pool", we.Waiting)
				}
				h.gate.Release()
				act := testkit.Receive(t, done, "the derivation")
				assert.Len(t, act.Modules, 13)
				h.mu.Lock()
				assert.LessOrEqual(t, h.most, workers, "never more than ReadPool-1 at once")
				h.mu.Unlock()
			})
		}
	})
}
