package rx

import (
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// timerSlot holds the one timer an operator has armed, so that the
// subscription's cancellation can stop it from any goroutine. Once closed it
// arms nothing more. A callback already in flight when it is closed may still
// run: callbacks check the scope before delivering anything.
type timerSlot struct {
	mu     sync.Mutex
	stop   func() bool
	closed bool
}

func (t *timerSlot) arm(clk clock.Clock, d time.Duration, f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.stop = after(clk, d, f)
	}
}

func (t *timerSlot) close() {
	t.mu.Lock()
	stop := t.stop
	t.closed, t.stop = true, nil
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// timed is an event of a timer-driven operator: a notification from its
// source or a tick of its timer. Both go through one mailbox, so the
// operator's state is touched by one caller at a time and the order in
// which they are handled is the order they are delivered in.
type timed[T any] struct {
	note[T]
	tick bool
}
