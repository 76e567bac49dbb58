package landing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
)

// ErrClosed is returned by a ModuleLanding that has been closed, including to
// calls that were waiting for the lane or a read slot when it closed.
var ErrClosed = errors.New("registry: module landing is closed")

// WaitError reports a wait that ended before what it waited on became
// available, because the caller's context was done.
type WaitError struct {
	Waiting string // what was waited on, e.g. "the landing lane"
	Holder  string // who held it when the wait ended, when known
	Err     error  // why the wait ended: the context's cause
	OpErr   error  // the interrupted volume operation's own error, if any
}

func (e *WaitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "registry: gave up waiting on %s", e.Waiting)
	if e.Holder != "" {
		fmt.Fprintf(&b, " (held by %s)", e.Holder)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *WaitError) Unwrap() []error {
	if e.OpErr == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.OpErr}
}

// slots is a counting semaphore whose acquisition is bounded by a context and
// by the owner closing, and which remembers what holds it for error messages.
type slots struct {
	name string        // what a waiter waits on, e.g. "the landing lane"
	ch   chan struct{} // one token per held slot
	done <-chan struct{}
	log  *slog.Logger

	mu      sync.Mutex
	holders map[int]string
	next    int
}

func newSlots(name string, capacity int, done <-chan struct{}, log *slog.Logger) *slots {
	return &slots{name: name, ch: make(chan struct{}, capacity), done: done, log: log, holders: map[int]string{}}
}

// WaitingMessage is the debug line a call logs when it is about to wait for
// the landing lane or the read pool; its attribute "waitingOn" names which,
// "holder" names the call and "heldBy" what holds the slots.
const WaitingMessage = "landing: waiting for a slot"

// acquire takes a slot for holder, waiting no longer than ctx allows. Before
// the caller blocks it logs WaitingMessage at debug level: slow landings and
// reads can be told apart from a slow volume. The returned release must be
// called exactly once.
func (s *slots) acquire(ctx context.Context, holder string) (release func(), err error) {
	select {
	case <-s.done:
		return nil, ErrClosed
	default:
	}
	select {
	case s.ch <- struct{}{}:
	default:
		if s.log.Enabled(ctx, slog.LevelDebug) {
			s.log.LogAttrs(ctx, slog.LevelDebug, WaitingMessage,
				slog.String("waitingOn", s.name), slog.String("holder", holder), slog.String("heldBy", s.describeHolders()))
		}
		select {
		case s.ch <- struct{}{}:
		case <-ctx.Done():
			return nil, &WaitError{Waiting: s.name, Holder: s.describeHolders(), Err: context.Cause(ctx)}
		case <-s.done:
			return nil, ErrClosed
		}
	}
	s.mu.Lock()
	id := s.next
	s.next++
	s.holders[id] = holder
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.holders, id)
			s.mu.Unlock()
			<-s.ch
		})
	}, nil
}

func (s *slots) describeHolders() string {
	s.mu.Lock()
	names := slices.Sorted(maps.Values(s.holders))
	s.mu.Unlock()
	if len(names) > 3 {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
	}
	return strings.Join(names, ", ")
}
