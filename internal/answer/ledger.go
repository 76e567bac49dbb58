package answer

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/rx"
)

// Ledger records, for one request, every wait it went through: when each
// stage started and, once it has, when it finished. It starts at the
// request's arrival, so that an answer budget counts from there and a
// refusal can say what the request was still waiting on.
//
// A Ledger is safe for concurrent use. A nil *Ledger records nothing: its
// Enter returns a nil *Stage, whose Finish does nothing, so code that may run
// without a ledger needs no checks.
type Ledger struct {
	clk     clock.Clock
	arrival time.Time

	mu       sync.Mutex
	stages   []*Stage
	failedIn string // the first stage that ended with an error
	noted    string // see Note

	// The first stages a request enters live in the ledger itself: a
	// registry request enters three (authentication, activation, catalog),
	// so its ledger is its only allocation for them.
	inline    [inlineStages]Stage
	inlinePtr [inlineStages]*Stage
}

const inlineStages = 3

// Stage is one wait entered in a Ledger.
type Stage struct {
	ledger *Ledger
	name   string
	// started and ended count from the ledger's arrival: a request keeps
	// its stages in its ledger, and offsets are a third of the size of
	// instants.
	started  time.Duration
	ended    time.Duration // guarded by ledger.mu, as finished is
	finished bool
}

// StageTime is a finished stage and how long it took.
type StageTime struct {
	Name string
	Took time.Duration
}

// NewLedger starts a ledger now on clk (nil means the real clock).
func NewLedger(clk clock.Clock) *Ledger {
	if clk == nil {
		clk = clock.New()
	}
	return &Ledger{clk: clk, arrival: clk.Now()}
}

// Arrived returns the instant the ledger started: the request's arrival.
func (l *Ledger) Arrived() time.Time {
	if l == nil {
		return time.Time{}
	}
	return l.arrival
}

// Elapsed returns how long ago the request arrived.
func (l *Ledger) Elapsed() time.Duration {
	if l == nil {
		return 0
	}
	return l.clk.Since(l.arrival)
}

// Enter records that a wait named stage starts now. Call Finish on the
// result when it ends.
func (l *Ledger) Enter(stage string) *Stage {
	if l == nil {
		return nil
	}
	started := l.clk.Since(l.arrival)
	l.mu.Lock()
	var s *Stage
	if n := len(l.stages); n < inlineStages {
		if l.stages == nil {
			l.stages = l.inlinePtr[:0]
		}
		s = &l.inline[n]
	} else {
		s = new(Stage)
	}
	*s = Stage{ledger: l, name: stage, started: started}
	l.stages = append(l.stages, s)
	l.mu.Unlock()
	return s
}

// Finish records that the stage's wait is over. Only the first call counts.
func (s *Stage) Finish() {
	if s == nil {
		return
	}
	now := s.ledger.clk.Since(s.ledger.arrival)
	s.ledger.mu.Lock()
	if !s.finished {
		s.ended, s.finished = now, true
	}
	s.ledger.mu.Unlock()
}

// fail records that the stage's wait ended with an error: the first such
// stage is the one a refusal names.
func (s *Stage) fail() {
	if s == nil {
		return
	}
	s.Finish()
	s.ledger.mu.Lock()
	if s.ledger.failedIn == "" {
		s.ledger.failedIn = s.name
	}
	s.ledger.mu.Unlock()
}

// Note records what the request is refused because of, for a refusal made
// while no stage is pending (a route's own reason: a full upload slot, an
// unready store): the stage a metric or log names then. The last note
// counts.
func (l *Ledger) Note(stage string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.noted = stage
	l.mu.Unlock()
}

// Noted returns the last Note, or "".
func (l *Ledger) Noted() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.noted
}

// failedStage returns the first stage that ended with an error, or "".
func (l *Ledger) failedStage() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failedIn
}

// Name returns the stage's name.
func (s *Stage) Name() string {
	if s == nil {
		return ""
	}
	return s.name
}

// Pending returns the names of the stages still running, in the order they
// were entered. It never returns nil.
func (l *Ledger) Pending() []string {
	pending := []string{}
	if l == nil {
		return pending
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.stages {
		if !s.finished {
			pending = append(pending, s.name)
		}
	}
	return pending
}

// Finished returns the stages that have finished, in entry order, with how
// long each took.
func (l *Ledger) Finished() []StageTime {
	return l.AppendFinished(nil)
}

// AppendFinished appends the stages that have finished to dst, as Finished
// returns them, and returns the extended slice (nil when dst is nil and
// none has finished). The metrics read them on every request: with dst an
// array of the caller's, that costs no allocation.
func (l *Ledger) AppendFinished(dst []StageTime) []StageTime {
	if l == nil {
		return dst
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.stages {
		if s.finished {
			dst = append(dst, StageTime{Name: s.name, Took: s.ended - s.started})
		}
	}
	return dst
}

// Describe says in one line what the request is waiting on and what it has
// finished, e.g. "still waiting on: pushed artifacts record (running 15s).
// finished: instance key 10s".
func (l *Ledger) Describe() string {
	if l == nil {
		return "no stage had started"
	}
	now := l.clk.Since(l.arrival)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.stages) == 0 {
		return "no stage had started"
	}
	var running, done []string
	for _, s := range l.stages {
		if !s.finished {
			running = append(running, fmt.Sprintf("%s (running %s)", s.name, now-s.started))
		} else {
			done = append(done, fmt.Sprintf("%s %s", s.name, s.ended-s.started))
		}
	}
	var b strings.Builder
	if len(running) == 0 {
		b.WriteString("no stage still running")
	} else {
		b.WriteString("still waiting on: ")
		b.WriteString(strings.Join(running, "; "))
	}
	if len(done) > 0 {
		b.WriteString(". finished: ")
		b.WriteString(strings.Join(done, ", "))
	}
	return b.String()
}

type ledgerKey struct{}

// WithLedger returns a copy of ctx carrying l.
func WithLedger(ctx context.Context, l *Ledger) context.Context {
	return context.WithValue(ctx, ledgerKey{}, l)
}

// LedgerFrom returns the ledger ctx carries, or nil.
func LedgerFrom(ctx context.Context) *Ledger {
	l, _ := ctx.Value(ledgerKey{}).(*Ledger)
	return l
}

// Arrival is the first middleware of a registry route: it starts the
// request's ledger on clk (nil means the real clock), so that every answer
// budget counts from the request's arrival, not from whichever handler
// happens to enforce it. A request that already carries a ledger keeps it.
func Arrival(clk clock.Clock, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if LedgerFrom(r.Context()) == nil {
			r = r.WithContext(WithLedger(r.Context(), NewLedger(clk)))
		}
		next.ServeHTTP(w, r)
	})
}

// InStage enters a stage named stage in l for each subscription to src and
// finishes it at src's first value or terminal notification, whichever
// comes first. Unsubscribing does not finish it: a stage that was abandoned
// is still what the request was waiting on. A nil l returns src unchanged.
func InStage[T any](src rx.Observable[T], l *Ledger, stage string) rx.Observable[T] {
	if l == nil {
		return src
	}
	return rx.Defer(func() rx.Observable[T] { return inStage(src, l.Enter(stage)) })
}

// Continue is InStage for a stage entered already (s, from Enter), as a
// caller that waited in it before it had src does: it finishes s at src's
// first value or terminal notification (only the first Finish counts). A
// nil s returns src unchanged.
func Continue[T any](src rx.Observable[T], s *Stage) rx.Observable[T] {
	if s == nil {
		return src
	}
	return rx.Defer(func() rx.Observable[T] { return inStage(src, s) })
}

func inStage[T any](src rx.Observable[T], s *Stage) rx.Observable[T] {
	finish := rx.Defer(func() rx.Observable[T] {
		s.Finish()
		return rx.Empty[T]()
	})
	failed := func(error) rx.Observable[T] {
		s.fail()
		return nil // passes the error on
	}
	answered := rx.Map(src, func(v T) T { s.Finish(); return v })
	return rx.Concat(rx.Catch(answered, failed), finish)
}
