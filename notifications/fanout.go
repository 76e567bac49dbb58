package notifications

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// fanOutStall is how long a fan-out whose deliveries all make no progress
// (every goroutine of it held by an observer) waits before it adds a
// goroutine to deliver the rest.
const fanOutStall = 10 * time.Millisecond

// fanOutWorkers is how many goroutines a fan-out starts with.
func fanOutWorkers() int { return max(2*runtime.GOMAXPROCS(0), 4) }

// fanOut delivers the due states of bells (each already marked draining
// by its caller) on a few goroutines, not one per bell: a change of the
// Admin notifications seen by 10,000 admins costs a handful of goroutines,
// each taking the next bell in turn. An observer that does not return
// holds the goroutine delivering to it, and no other: when every goroutine
// of the fan-out is held for fanOutStall with bells still waiting, another
// is started (on clk), so stuck observers delay the rest by at most that
// each, as a goroutine per bell did. A bell held once is skipped by later
// changes (it is draining): they wait for its observer, as before.
type fanOut struct {
	bells     []*bell
	next      atomic.Int64  // the next bell to take
	delivered atomic.Int64  // bells whose delivery returned
	handed    chan struct{} // closed when the last bell is taken
}

func startFanOut(bells []*bell, clk clock.Clock) {
	if len(bells) == 0 {
		return
	}
	fo := &fanOut{bells: bells, handed: make(chan struct{})}
	n := min(len(bells), fanOutWorkers())
	for range n {
		go fo.work()
	}
	if len(bells) > n {
		go fo.supervise(clk)
	}
}

func (fo *fanOut) work() {
	last := int64(len(fo.bells) - 1)
	for {
		i := fo.next.Add(1) - 1
		if i > last {
			return
		}
		if i == last {
			close(fo.handed)
		}
		b := fo.bells[i]
		b.mu.Lock()
		b.deliver()
		fo.delivered.Add(1)
	}
}

// supervise adds a goroutine whenever a fanOutStall passes with no
// delivery returning and bells still to take; it ends when the last bell
// is taken.
func (fo *fanOut) supervise(clk clock.Clock) {
	seen := fo.delivered.Load()
	for {
		select {
		case <-fo.handed:
			return
		case <-clk.After(fanOutStall):
		}
		if d := fo.delivered.Load(); d != seen {
			seen = d
			continue
		}
		go fo.work()
	}
}
