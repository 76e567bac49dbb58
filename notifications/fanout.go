package notifications

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
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
// return holds the goroutine delivering to it, and no other: every
// delivery arms a timer (on clk), and one held for fanOutStall starts
// another goroutine to take the next bells, so a slow observer delays the
// rest by at most fanOutStall (on one of the fan-out's goroutines), whether
// or not other deliveries return meanwhile. Goroutines stay bounded by the
// bells: each delivery starts at most one. A bell held once is skipped by
// later changes (it is draining): they wait for its observer, as before.
type fanOut struct {
	bells []*bell
	clk   clock.Clock
	next  atomic.Int64 // the next bell to take
}

func startFanOut(bells []*bell, clk clock.Clock) {
	if len(bells) == 0 {
		return
	}
	fo := &fanOut{bells: bells, clk: clk}
	for range min(len(bells), fanOutWorkers()) {
		go fo.work()
	}
}

func (fo *fanOut) work() {
	last := int64(len(fo.bells) - 1)
	for {
		i := fo.next.Add(1) - 1
		if i > last {
			return
		}
		b := fo.bells[i]
		var t *clock.Timer
		if i < last { // the last bell leaves none for another goroutine
			t = fo.clk.AfterFunc(fanOutStall, func() { go fo.work() })
		}
		b.mu.Lock()
		b.deliver()
		if t != nil {
			t.Stop()
		}
	}
}
