package notifications

import (
	"sync"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// adminFeed is the one live read of the Admin notifications (BellQuery(Admin))
// that every global admin's bell of a Service shares while any is open. A
// change to them is decoded once, into one read-only slice newest first,
// handed to each bell; the store holds one live query for them instead of
// one per admin, so a broadcast to Admin costs the store one frame.
//
// Only bells whose viewer Admins allowed join it (Bell decides, per
// subscription, as before). It hands a bell its notifications without
// waiting on the bell's observer (sharedFrame, and for a change a fan-out
// of a few goroutines, see fanOut), so a slow admin never delays another.
type adminFeed struct {
	svc *Service

	mu sync.Mutex
	// Guarded by mu; mu is taken after Service.adminMu and before a
	// bell's own lock, never the other way round.
	items   map[string]Notification // by path (paths are case-sensitive)
	snap    *adminSnapshot          // items as bells read them, replaced on each change, never changed
	initial bool                    // sorted holds the read's Initial or later
	ended   bool                    // the read failed or completed: no bell joins any more
	endErr  error
	bells   map[*bell]int // the bells reading the feed → their Admin leg
	sub     rx.Subscription
	closed  bool // the last bell left: the read is (to be) unsubscribed
}

// joinAdmins joins leg i of b to the Service's shared Admin read, opening it
// if none is open, and returns the func that leaves it (closing it when b
// was the last).
func (s *Service) joinAdmins(b *bell, i int) (leave func()) {
	s.adminMu.Lock()
	f := s.admins
	start := f == nil
	if start {
		f = &adminFeed{svc: s, items: map[string]Notification{}, bells: map[*bell]int{}}
		s.admins = f
	}
	f.mu.Lock()
	f.bells[b] = i
	// A bell joining an open read starts from its current notifications,
	// handed under f.mu so that no later change overtakes them.
	if f.initial {
		b.sharedFrame(i, f.snap)
	}
	f.mu.Unlock()
	s.adminMu.Unlock()
	leave = func() { s.leaveAdmins(f, b) }
	if !start {
		return leave
	}
	// Outside the locks: the store may deliver the Initial before
	// Subscribe returns.
	sub := s.Mesh.Query(BellQuery(Admin)).Subscribe(rx.NewObserver(f.frame, f.fail, f.complete))
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		sub.Unsubscribe()
		return leave
	}
	f.sub = sub
	f.mu.Unlock()
	return leave
}

// leaveAdmins removes b from f and closes f's read when b was the last.
func (s *Service) leaveAdmins(f *adminFeed, b *bell) {
	s.adminMu.Lock()
	f.mu.Lock()
	delete(f.bells, b)
	var sub rx.Subscription
	if len(f.bells) == 0 && !f.closed {
		f.closed = true
		sub, f.sub = f.sub, nil
		if s.admins == f {
			s.admins = nil
		}
	}
	f.mu.Unlock()
	s.adminMu.Unlock()
	if sub != nil {
		sub.Unsubscribe()
	}
}

// frame applies one change of the Admin notifications, decoding each node
// once, and hands the result to every bell.
func (f *adminFeed) frame(c mesh.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return
	}
	switch c.Kind {
	case mesh.Initial, mesh.Reset:
		clear(f.items)
		f.initial = true
		fallthrough
	case mesh.Added, mesh.Updated:
		for _, node := range c.Items {
			n, ok := decode(node)
			if !ok {
				f.svc.log().Warn("notifications: stored notification does not decode; showing it by name",
					"path", node.Path)
			}
			f.items[node.Path] = n
		}
	case mesh.Removed:
		for _, node := range c.Items {
			delete(f.items, node.Path)
		}
	}
	if !f.initial {
		return
	}
	all := make([]Notification, 0, len(f.items))
	for _, n := range f.items {
		all = append(all, n)
	}
	snap := &adminSnapshot{items: all, state: stateOf(all)} // stateOf sorts all
	f.snap = snap
	// Each bell gets snap now, in order with the changes before and after
	// it; their states are delivered by a fan-out of a few goroutines.
	due := make([]*bell, 0, len(f.bells))
	for b, i := range f.bells {
		if b.sharedSet(i, snap) {
			due = append(due, b)
		}
	}
	startFanOut(due, f.svc.clock())
}

// adminSnapshot is the Admin notifications at one time, shared read-only
// by every admin's bell: newest first, and grouped as a bell shows them.
type adminSnapshot struct {
	items []Notification
	state BellState
}

// fail ends every bell of f with err; the next admin's bell opens a new read.
func (f *adminFeed) fail(err error) { f.end(err) }

// complete completes the Admin leg of every bell of f (the store closed).
func (f *adminFeed) complete() { f.end(nil) }

func (f *adminFeed) end(err error) {
	s := f.svc
	s.adminMu.Lock()
	f.mu.Lock()
	if s.admins == f {
		s.admins = nil
	}
	if f.ended {
		f.mu.Unlock()
		s.adminMu.Unlock()
		return
	}
	f.ended, f.endErr = true, err
	for b, i := range f.bells {
		b.sharedEnd(i, err)
	}
	f.mu.Unlock()
	s.adminMu.Unlock()
}
