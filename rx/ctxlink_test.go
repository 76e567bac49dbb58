package rx_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/types"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/rx"
)

// ctxRace sets up the race every blocking consumer must settle: ctx ends
// (from the body or a user function), context.AfterFunc's goroutine wins
// the cancellation of the consumer's scope and is held inside a Finally
// (still to run the source's cleanups), and only then does the consumer's
// goroutine come to cancel, losing the race.
type ctxRace struct {
	t       *testing.T
	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex
	log     []string
	started chan struct{} // the Finally runs, on AfterFunc's goroutine
	release chan struct{} // lets it finish
	done    bool          // it has finished
}

func newCtxRace(t *testing.T) *ctxRace {
	ctx, cancel := context.WithCancel(context.Background())
	return &ctxRace{t: t, ctx: ctx, cancel: cancel, started: make(chan struct{}), release: make(chan struct{})}
}

func (r *ctxRace) add(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

// chain is Range(0, 100) → Map (logged; at value at, the ctx ends there
// when inFn) → Finally (held as above).
func (r *ctxRace) chain(at int, inFn bool) rx.Observable[int] {
	m := rx.Map(rx.Range(0, 100), func(v int) int {
		r.add(fmt.Sprint("map ", v))
		if inFn && v == at {
			r.end()
		}
		return v
	})
	return rx.Finally(m, func() {
		close(r.started)
		<-r.release
		r.mu.Lock()
		r.done = true
		r.mu.Unlock()
		r.add("finally")
	})
}

// end ends ctx and returns once AfterFunc's goroutine is inside the
// Finally: it has won the cancellation.
func (r *ctxRace) end() {
	r.add("cancel")
	r.cancel()
	select {
	case <-r.started:
	case <-time.After(30 * time.Second): // a hang guard, never reached when the test passes
		r.t.Error("AfterFunc's goroutine did not reach the Finally within 30s")
	}
}

// releaseWhenSettling lets the Finally finish once the consumer waits for
// it (its goroutine is parked in ctxLink.settle) or has returned without
// waiting (returned closed): either way it is released, so the test ends.
func (r *ctxRace) releaseWhenSettling(returned <-chan struct{}) {
	defer close(r.release)
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-returned:
			return
		default:
		}
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "[chan receive") && strings.Contains(g, "(*ctxLink).settle") {
				return
			}
		}
		runtime.Gosched()
	}
	r.t.Error("the consumer neither returned nor waited for the cancellation within 30s")
}

// check fails unless the Finally had finished when the consumer returned,
// and no user function was called after the consumer saw the end (the
// last entry before "returned").
func (r *ctxRace) check(name string, doneAtReturn bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !doneAtReturn {
		r.t.Errorf("%s returned before the source's Finally, run by AfterFunc's goroutine, had finished: %v", name, r.log)
	}
	for i, s := range r.log {
		if s == "cancel" {
			for _, after := range r.log[i+1:] {
				if strings.HasPrefix(after, "map ") {
					r.t.Errorf("%s: the source called a user function after ctx ended and the consumer cancelled: %v", name, r.log)
					break
				}
			}
			break
		}
	}
}

// TestABlockingConsumerWhoseCtxEndsReturnsOnlyOnceTheSourcesCleanupsHaveRun
// holds every blocking consumer that ties ctx to its subscription through
// context.AfterFunc to this: when ctx ends and AfterFunc's goroutine starts
// the cancellation, the consumer returns (a range loop ends, First and
// Collect return, ToChannel closes its channel) only once the source's
// cleanups have run, and a synchronous source calls no user function after
// the consumer has cancelled. A consumer missing from the table fails
// TestEveryBlockingConsumerIsInTheCtxRaceTable.
//
// Negative control, run: with ctxLink.settle not waiting for AfterFunc's
// cancellation (its wait left out: the behaviour before ctxLink),
// every row fails, in every run: "All (ctx ended in the body) returned
// before the source's Finally, run by AfterFunc's goroutine, had
// finished", and so First, Collect and ToChannel.
func TestABlockingConsumerWhoseCtxEndsReturnsOnlyOnceTheSourcesCleanupsHaveRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, c := range ctxRaceConsumers() {
		t.Run(c.name, func(t *testing.T) {
			r := newCtxRace(t)
			defer r.cancel()
			returned := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { r.releaseWhenSettling(returned) })
			doneAtReturn := c.run(r)
			close(returned)
			wg.Wait()
			r.check(c.name, doneAtReturn)
		})
	}
}

type ctxRaceConsumer struct {
	name string
	// run consumes r's chain until the consumer returns, and reports
	// whether r's Finally had finished by then.
	run func(r *ctxRace) bool
}

func (r *ctxRace) finished() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}

func ctxRaceConsumers() []ctxRaceConsumer {
	return []ctxRaceConsumer{
		{"All (ctx ended in the body)", func(r *ctxRace) bool {
			for v, err := range rx.All(r.ctx, r.chain(0, false)) {
				if err != nil {
					r.add("error " + err.Error())
					continue
				}
				if v == 3 {
					r.end()
				}
			}
			return r.finished()
		}},
		{"All (ctx ended in a user function)", func(r *ctxRace) bool {
			for _, err := range rx.All(r.ctx, r.chain(3, true)) {
				if err != nil {
					r.add("error " + err.Error())
				}
			}
			return r.finished()
		}},
		{"First", func(r *ctxRace) bool {
			_, err := rx.First(r.ctx, r.chain(0, true))
			r.add(fmt.Sprint("first ", err))
			return r.finished()
		}},
		{"Collect", func(r *ctxRace) bool {
			_, err := rx.Collect(r.ctx, r.chain(3, true))
			r.add(fmt.Sprint("collect ", err))
			return r.finished()
		}},
		{"ToChannel", func(r *ctxRace) bool {
			for range rx.ToChannel(r.ctx, r.chain(3, true), 0) {
			}
			return r.finished()
		}},
	}
}

// TestEveryBlockingConsumerIsInTheCtxRaceTable: every exported function
// of rx that takes a context and consumes an Observable is a row of the
// table above (Create takes none: its producer receives one). Negative
// control: with the First row removed it fails naming First.
func TestEveryBlockingConsumerIsInTheCtxRaceTable(t *testing.T) {
	rows := map[string]bool{}
	for _, c := range ctxRaceConsumers() {
		rows[strings.Fields(c.name)[0]] = true
	}
	n := 0
	for _, fd := range exportedFuncs(t) {
		if !takesContextAndObservable(fd) {
			continue
		}
		n++
		name := fd.Name.Name
		if !rows[name] {
			t.Errorf("%s takes a context and consumes an Observable but is not in ctxRaceConsumers", name)
		}
	}
	if n < 4 {
		t.Errorf("found %d consumers taking a context: is the test reading package rx?", n)
	}
}

// takesContextAndObservable reports whether fd has a context.Context
// parameter and an Observable one.
func takesContextAndObservable(fd *ast.FuncDecl) bool {
	ctx, obs := false, false
	for _, f := range fd.Type.Params.List {
		s := types.ExprString(f.Type)
		ctx = ctx || s == "context.Context"
		obs = obs || strings.HasPrefix(s, "Observable[")
	}
	return ctx && obs
}

// A blocking consumer also returns only once a cancellation the source's
// own goroutine started has run: First's answer, Collect's end and
// ToChannel's end, delivered from a goroutine of the source's, cancel the
// subscription there (ToChannel's so that a Finally's function runs within
// it; All's too, counted before the loop can see the end). Here that
// cancellation's Finally ends ctx (the consumer wakes) and is held until
// the consumer has either returned or is waiting for it. Negative controls
// (run): with ctxLink waiting only for AfterFunc's cancellation (as
// before), First and Collect returned before the Finally had finished, and
// ToChannel, its end cancelling there, closed its channel before it had;
// with All handing the end over without cancelling, its loop ended before
// the Finally had finished.
func TestABlockingConsumerReturnsOnlyOnceACancellationTheSourcesGoroutineStartedHasRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, c := range []struct {
		name    string
		consume func(ctx context.Context, src rx.Observable[int]) error
	}{
		{"First", func(ctx context.Context, src rx.Observable[int]) error { _, err := rx.First(ctx, src); return err }},
		{"Collect", func(ctx context.Context, src rx.Observable[int]) error { _, err := rx.Collect(ctx, src); return err }},
		{"ToChannel", func(ctx context.Context, src rx.Observable[int]) error {
			for range rx.ToChannel(ctx, src, 0) {
			}
			return nil
		}},
		{"All", func(ctx context.Context, src rx.Observable[int]) error {
			for _, err := range rx.All(ctx, src) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newCtxRace(t)
			defer r.cancel()
			src := rx.Finally(rx.Create(func(_ context.Context, o rx.Observer[int]) {
				go func() { o.OnNext(1); o.OnCompleted() }()
			}), func() {
				r.cancel() // the consumer wakes, and comes to settle
				<-r.release
				r.mu.Lock()
				r.done = true
				r.mu.Unlock()
			})
			returned := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { r.releaseWhenSettling(returned) })
			err := c.consume(r.ctx, src)
			doneAtReturn := r.finished()
			close(returned)
			wg.Wait()
			if !doneAtReturn {
				t.Errorf("%s returned (%v) before the Finally its source's goroutine ran had finished", c.name, err)
			}
		})
	}
}
