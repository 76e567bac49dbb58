package rxgoadapt

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/meshrx/meshrx/rx"
	"github.com/reactivex/rxgo/v2"
)

// DefaultDrainBudget is how long an ended FromRxGo subscription keeps
// reading what rxgo still sends before abandoning the source.
const DefaultDrainBudget = 5 * time.Second

// An Option configures FromRxGo and FromRxGoOf.
type Option func(*config)

// WithDrainBudget sets how long an ended subscription drains the rxgo
// source's channel, waiting for it to close (DefaultDrainBudget if d <= 0).
func WithDrainBudget(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.budget = d
		}
	}
}

// WithClock sets the clock the drain budget runs on (clock.New() by default).
func WithClock(clk clock.Clock) Option {
	return func(c *config) {
		if clk != nil {
			c.clk = clk
		}
	}
}

// WithLogger sets where an abandoned source is reported (slog.Default() by default).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

type config struct {
	budget time.Duration
	clk    clock.Clock
	log    *slog.Logger
}

func newConfig(opts []Option) config {
	c := config{budget: DefaultDrainBudget}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.clk == nil {
		c.clk = clock.New()
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c
}

// drainer empties an rxgo channel after its subscription ended: several rxgo
// operators send without watching their context, and would block forever on
// a channel nobody reads. The budget starts when the subscription ends, on
// the goroutine that ends it, so a virtual clock sees it armed at once.
type drainer struct {
	cfg     config
	giveUp  chan struct{}
	done    atomic.Bool
	drained atomic.Int64

	mu    sync.Mutex
	stop  func() bool
	armed bool
}

func newDrainer(cfg config) *drainer {
	return &drainer{cfg: cfg, giveUp: make(chan struct{})}
}

func (d *drainer) arm() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.armed || d.done.Load() {
		return
	}
	d.armed = true
	d.stop = after(d.cfg.clk, d.cfg.budget, d.expire)
}

func (d *drainer) expire() {
	if d.done.Load() {
		return
	}
	d.cfg.log.Warn("rxgoadapt: abandoned an rxgo source that kept its channel open after its subscription ended",
		"waitingOn", "rxgo item channel to close",
		"budget", d.cfg.budget,
		"drained", d.drained.Load())
	close(d.giveUp)
}

// run reads items until rxgo closes the channel or the budget runs out.
func (d *drainer) run(items <-chan rxgo.Item) {
	defer d.finish()
	for {
		select {
		case _, ok := <-items:
			if !ok {
				return
			}
			d.drained.Add(1)
		case <-d.giveUp:
			return
		}
	}
}

func (d *drainer) finish() {
	d.done.Store(true)
	d.mu.Lock()
	stop := d.stop
	d.stop = nil
	d.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// after runs f once d from now on clk, on the clock's own schedule when it
// has one (a virtual clock runs f inside the call that advances it).
func after(clk clock.Clock, d time.Duration, f func()) (stop func() bool) {
	if s, ok := clk.(rx.Scheduler); ok {
		return s.Schedule(d, f)
	}
	return clk.AfterFunc(d, f).Stop
}
