package notifications

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/rx"
)

// fanOutStall is how long one delivery of a fan-out may hold its goroutine
// before another goroutine is started to deliver the rest.
const fanOutStall = 10 * time.Millisecond

// fanOutWorkers is how many goroutines a fan-out starts with.
func fanOutWorkers() int { return max(2*runtime.GOMAXPROCS(0), 4) }

// fanOut delivers the due states of bells (each already marked draining
// by its caller) on a few goroutines, not one per bell: a change of the
// Admin notifications seen by 10,000 admins costs a handful of goroutines,
// each taking the next bell in turn. An observer that is slow or does not
// return holds the goroutine delivering to it, and no other: one checker
// per fan-out (a timer on clk, every fanOutStall/2 while bells are left to
// take) starts another goroutine for each delivery it finds held for
// fanOutStall, so a slow observer delays the rest by at most 1.5 ×
// fanOutStall (on one of the fan-out's goroutines), whether or not other
// deliveries return meanwhile. A delivery costs its goroutine a clock
// reading, not a timer. Goroutines stay bounded by the bells: each
// delivery starts at most one. A bell held once is skipped by later
// changes (it is draining): they wait for its observer, as before.
type fanOut struct {
	bells []*bell
	clk   clock.Clock
	next  atomic.Int64 // the next bell to take

	mu      sync.Mutex
	workers []*fanWorker // guarded by mu
}

// fanWorker is one goroutine of a fan-out: the delivery it is in, and
// since when.
type fanWorker struct {
	at      atomic.Int64 // 1 + the index of the bell being delivered; 0 between deliveries
	since   atomic.Int64 // when that delivery began (unix ns on the fan-out's clock)
	started int64        // the checker's: the delivery it started another goroutine for
}

func startFanOut(bells []*bell, clk clock.Clock) {
	if len(bells) == 0 {
		return
	}
	fo := &fanOut{bells: bells, clk: clk}
	n := min(len(bells), fanOutWorkers())
	fo.mu.Lock()
	for range n {
		fo.spawn()
	}
	fo.mu.Unlock()
	if len(bells) > n {
		fo.checkLater()
	}
}

// checkLater runs check fanOutStall/2 from now. On a clock that runs its
// own timers (rx.Scheduler, as rxtest's does) check runs on the goroutine
// moving the time, as rx's timers do; otherwise on a goroutine of its own.
func (fo *fanOut) checkLater() {
	if s, ok := fo.clk.(rx.Scheduler); ok {
		s.Schedule(fanOutStall/2, fo.check)
		return
	}
	fo.clk.AfterFunc(fanOutStall/2, fo.check)
}

// spawn starts a goroutine delivering the next bells; fo.mu is held.
func (fo *fanOut) spawn() {
	w := &fanWorker{}
	fo.workers = append(fo.workers, w)
	go fo.work(w)
}

func (fo *fanOut) work(w *fanWorker) {
	last := int64(len(fo.bells) - 1)
	for {
		i := fo.next.Add(1) - 1
		if i > last {
			return
		}
		b := fo.bells[i]
		w.since.Store(fo.clk.Now().UnixNano())
		w.at.Store(i + 1)
		b.lockAndDeliver()
		w.at.Store(0)
	}
}

// check starts a goroutine for each delivery held for fanOutStall, and
// checks again later while bells are left to take (a delivery held once
// they are all taken holds up no other).
func (fo *fanOut) check() {
	last := int64(len(fo.bells) - 1)
	if fo.next.Load() > last {
		return
	}
	now := fo.clk.Now().UnixNano()
	fo.mu.Lock()
	for _, w := range fo.workers[:len(fo.workers):len(fo.workers)] {
		at := w.at.Load()
		if at == 0 || at == w.started || now-w.since.Load() < int64(fanOutStall) {
			continue
		}
		w.started = at
		fo.spawn()
	}
	fo.mu.Unlock()
	fo.checkLater()
}
