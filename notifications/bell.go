package notifications

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// BellState is what a viewer's bell shows: their notifications grouped by
// the entity they are about, and how many are unread. Its slices may be
// shared with other viewers' bells (every admin with nothing of their own
// gets the same state of the Admin notifications): treat them as read-only.
type BellState struct {
	// Groups hold the notifications by source, the group with the newest
	// notification first.
	Groups []Group
	// Unread counts the notifications not yet read, in every group.
	Unread int
}

// Group is the notifications about one entity, newest first.
type Group struct {
	// Source is the entity the notifications are about: the owner of their
	// TargetPath ("" when they name none).
	Source string
	Items  []Notification
}

// Len returns the number of notifications in s.
func (s BellState) Len() int {
	n := 0
	for _, g := range s.Groups {
		n += len(g.Items)
	}
	return n
}

// Bell returns the viewer's bell, live: a BellState once the viewer's
// notifications have been read, then another after every change to them.
//
// It reads the viewer's own notifications (BellQuery(viewer)) and, when
// Admins says the viewer is a global admin, the Admin notifications
// (BellQuery(Admin)): each a live read pinned to one partition, merged here.
// The Admin read is one live read per Service, shared by every global
// admin's bell open at once: a change to the Admin notifications is read and
// decoded once, however many admins watch (see adminFeed); it is opened with
// the first such bell and closed with the last.
// Admins is asked once per subscription, on a goroutine of the bell's own,
// bounded by Budgets.Permission on Clock and ended by Unsubscribe (so
// rx.First or Collect return as soon as their context ends, the check
// still waiting); Denied or Undetermined leave the Admin notifications out. Each read's first
// frame is bounded by the store (Budgets.QueryInitial there).
//
// A viewer that is not a partition name, or names the Admin partition (in
// any case: Admin's notifications are for global admins only, not for a
// user who happens to be called "admin"), fails with *InvalidError. The bell
// fails when a read fails, and completes when every read has completed (the
// store closed).
func (s *Service) Bell(viewer string) rx.Observable[BellState] {
	if s.Mesh == nil {
		return rx.Throw[BellState](noMesh())
	}
	if err := checkViewer(viewer); err != nil {
		return rx.Throw[BellState](err)
	}
	return bellObservable{svc: s, viewer: viewer}
}

// bellObservable is Bell's observable. It is its own operator rather than
// rx.Defer(rx.Finally(rx.Create(…))): a bell already serialises its
// notifications (one delivering goroutine at a time, see drain), ends once
// and checks its subscription before each notification, so the chain's
// stages only cost each delivery a pass through four more structs per
// bell — an Admin broadcast to 10,000 admins' bells passed through 40,000,
// mostly cold in the cache (≈ 11 % of examples/bell's CPU per broadcast).
// Composed with rx operators it is guarded as any observable from outside
// rx is.
//
// It keeps the rx contract (rx/doc.go): notifications serialised, nothing
// after the terminal one, Unsubscribe idempotent and never waiting for the
// observer, and once it has returned no notification starts (deliver
// checks before each). The legs are released on Unsubscribe or right
// after the terminal notification, as rx.Finally released them.
type bellObservable struct {
	svc    *Service
	viewer string
}

// Subscribe opens a bell for o. When the global admin check is to be made
// (Admins set) the legs are decided and
// subscribed on a goroutine of the bell's own and Subscribe returns at once:
// the check may wait up to Budgets.Permission, and the subscriber must be
// able to end that wait — rx.First and Collect unsubscribe when their
// context ends, which they can only do once Subscribe has returned the
// subscription (an observable from outside rx does not see their context
// while it runs inside Subscribe). Unsubscribe ends the check's context, so
// the goroutine ends with the subscription or at the budget, whichever
// comes first. Without a check the legs are subscribed on the calling
// goroutine.
func (bo bellObservable) Subscribe(o rx.Observer[BellState]) rx.Subscription {
	if o == nil {
		panic("notifications.Bell.Subscribe: nil observer")
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	b := &bell{svc: bo.svc, o: o, cancel: cancel}
	if bo.svc.Admins != nil {
		check := bo.svc.adminCheck(ctx, bo.viewer) // its budget runs from now
		go b.open(ctx, bo.viewer, check)
	} else {
		b.open(ctx, bo.viewer, nil)
	}
	return b
}

// Unsubscribe ends the bell's subscription: no notification starts once it
// has returned (one under way on another goroutine may still be running),
// and its legs are released.
func (b *bell) Unsubscribe() {
	b.cancel(errUnsubscribed)
	b.unsubscribe()
}

// open decides the legs of the viewer's bell and subscribes them; check,
// when not nil, is the global admin check (Service.adminCheck).
func (b *bell) open(ctx context.Context, viewer string, check func() access.Decision) {
	s := b.svc
	addressees := []string{viewer}
	if check != nil && check().Allows() {
		addressees = append(addressees, Admin)
	}
	b.mu.Lock()
	if b.released {
		b.mu.Unlock()
		return
	}
	b.legs = b.legBuf[:0:len(b.legBuf)]
	if len(addressees) > len(b.legBuf) {
		b.legs = make([]leg, 0, len(addressees))
	}
	b.legs = b.legs[:len(addressees)]
	for i, a := range addressees {
		b.legs[i] = leg{addressee: a}
		if a != Admin || i == 0 {
			b.legs[i].items = map[string]Notification{}
		}
	}
	b.mu.Unlock()
	for i, a := range addressees {
		if ctx.Err() != nil {
			return // unsubscribed meanwhile
		}
		if a == Admin && i > 0 {
			if !b.keepLeave(s.joinAdmins(b, i)) {
				return
			}
			continue
		}
		sub := s.Mesh.Query(BellQuery(a)).Subscribe(rx.NewObserver(
			func(c mesh.Change) { b.frame(i, c) },
			func(err error) { b.end(err) },
			func() { b.completed(i) },
		))
		if !b.keep(sub) {
			return
		}
	}
	// Every leg is kept: from here on an Unsubscribe releases them all
	// before it returns, so the first state, which waited for this, may go.
	b.mu.Lock()
	b.opened = true
	if b.ended || !b.allInitial() {
		b.mu.Unlock()
		return
	}
	b.dirty = true
	b.drain()
}

// errUnsubscribed is the cause with which Unsubscribe ends a bell's
// context: an admin check it cuts short is the subscriber leaving, not a
// failure to warn about.
var errUnsubscribed = errors.New("notifications: the bell was unsubscribed")

// bell merges the legs of one subscription; it is the subscription.
type bell struct {
	o      rx.Observer[BellState]
	svc    *Service
	cancel context.CancelCauseFunc // ends open's context with errUnsubscribed: on Unsubscribe and after the terminal notification

	mu       sync.Mutex
	legs     []leg
	legBuf   [2]leg // legs' storage (a viewer's own, and Admin): in the bell, not a line of its own to miss per broadcast
	subs     []rx.Subscription
	leave    func() // leaves the shared Admin read; nil when not joined
	released bool   // the subscription ended: legs are unsubscribed as they come
	opened   bool   // every leg is subscribed and kept: no state is delivered before
	ended    bool   // a terminal notification is queued or delivered

	// The outbox: whether a new state is due (it is built when delivered,
	// so states that pile up cost one build), and the ending, delivered in
	// order by whichever caller found it empty, outside the lock, so an
	// observer may write to the store from OnNext.
	dirty     bool
	endErr    error
	endQueued bool
	draining  bool
}

type leg struct {
	addressee string
	items     map[string]Notification // by path (case-sensitive); nil for the shared Admin leg
	held      int                     // len(items), kept beside it: state reads it for every admin of a broadcast without touching the map (a cold line)
	shared    *adminSnapshot          // the shared Admin leg's notifications; read-only
	initial   bool
	done      bool
}

func (b *bell) keep(sub rx.Subscription) bool {
	b.mu.Lock()
	if b.released {
		b.mu.Unlock()
		sub.Unsubscribe()
		return false
	}
	b.subs = append(b.subs, sub)
	b.mu.Unlock()
	return true
}

// keepLeave is keep for the shared Admin read's leave.
func (b *bell) keepLeave(leave func()) bool {
	b.mu.Lock()
	if b.released {
		b.mu.Unlock()
		leave()
		return false
	}
	b.leave = leave
	b.mu.Unlock()
	return true
}

func (b *bell) unsubscribe() {
	b.mu.Lock()
	b.released = true
	subs, leave := b.subs, b.leave
	b.subs, b.leave = nil, nil
	b.mu.Unlock()
	for _, sub := range subs {
		sub.Unsubscribe()
	}
	if leave != nil {
		leave()
	}
}

func (b *bell) frame(i int, c mesh.Change) {
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		return
	}
	l := &b.legs[i]
	switch c.Kind {
	case mesh.Initial, mesh.Reset:
		clear(l.items)
		l.initial = true
		fallthrough
	case mesh.Added, mesh.Updated:
		for _, node := range c.Items {
			n, ok := decode(node)
			if !ok {
				b.svc.log().Warn("notifications: stored notification does not decode; showing it by name",
					"path", node.Path)
			}
			l.items[node.Path] = n
		}
	case mesh.Removed:
		for _, node := range c.Items {
			delete(l.items, node.Path)
		}
	}
	l.held = len(l.items)
	if !b.allInitial() {
		b.mu.Unlock()
		return
	}
	b.dirty = true
	b.drain()
}

// sharedFrame gives leg i, the shared Admin leg, its notifications (which
// the caller never changes again). It is called by the
// shared read, which must not wait on this bell's observer: a state is
// delivered on a goroutine of the bell's own (see drainElsewhere).
func (b *bell) sharedFrame(i int, snap *adminSnapshot) {
	if b.sharedSet(i, snap) {
		go b.lockAndDeliver()
	}
}

// sharedSet gives leg i, the shared Admin leg, its notifications, and
// reports whether the caller is to deliver the bell's state
// (lockAndDeliver): the bell was not delivering already, and is now marked
// as delivering. The fan-out of a change calls it for every bell, then
// delivers on a few goroutines; sharedFrame, for one bell, on its own.
func (b *bell) sharedSet(i int, snap *adminSnapshot) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return false
	}
	l := &b.legs[i]
	l.shared, l.initial = snap, true
	if !b.allInitial() {
		return false
	}
	b.dirty = true
	if b.draining {
		return false
	}
	b.draining = true
	return true
}

// sharedEnd ends leg i, the shared Admin leg: with err when it failed,
// completed otherwise, delivered as sharedFrame delivers.
func (b *bell) sharedEnd(i int, err error) {
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		return
	}
	if err != nil {
		b.ended, b.endQueued, b.endErr = true, true, err
		b.drainElsewhere()
		return
	}
	b.legs[i].done = true
	for _, l := range b.legs {
		if !l.done {
			b.mu.Unlock()
			return
		}
	}
	b.ended, b.endQueued = true, true
	b.drainElsewhere()
}

// allInitial reports whether the bell may deliver a state: every leg is
// subscribed and has had its first frame.
func (b *bell) allInitial() bool {
	if !b.opened {
		return false
	}
	for _, l := range b.legs {
		if !l.initial {
			return false
		}
	}
	return true
}

func (b *bell) end(err error) {
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		return
	}
	b.ended, b.endQueued, b.endErr = true, true, err
	b.drain()
}

func (b *bell) completed(i int) {
	b.mu.Lock()
	b.legs[i].done = true
	for _, l := range b.legs {
		if !l.done {
			b.mu.Unlock()
			return
		}
	}
	b.mu.Unlock()
	b.end(nil)
}

// drain is called with b.mu held and releases it. It delivers what is queued
// unless another call is already delivering, which then delivers it.
func (b *bell) drain() {
	if b.draining {
		b.mu.Unlock()
		return
	}
	b.draining = true
	b.deliver()
}

// drainElsewhere is drain on a goroutine of its own, started only when no
// delivery is under way: a bell holds no goroutine while idle.
func (b *bell) drainElsewhere() {
	if b.draining {
		b.mu.Unlock()
		return
	}
	b.draining = true
	b.mu.Unlock()
	go b.lockAndDeliver()
}

// lockAndDeliver is deliver for a caller that marked b draining and let go
// of b.mu.
func (b *bell) lockAndDeliver() {
	b.mu.Lock()
	b.deliver()
}

// deliver delivers what is queued until nothing is; it is called with b.mu
// held and b.draining set, and releases both. Nothing is delivered once the
// subscription is released (Unsubscribe, checked before each notification
// under b.mu), and after the terminal notification the legs are released.
func (b *bell) deliver() {
	for {
		dirty, endNow, err := b.dirty, b.endQueued, b.endErr
		b.dirty, b.endQueued = false, false
		if b.released || !dirty && !endNow {
			b.draining = false
			b.mu.Unlock()
			return
		}
		var st BellState
		if dirty {
			st = b.state()
		}
		b.mu.Unlock()
		if dirty {
			b.o.OnNext(st)
		}
		if endNow {
			if dirty && b.isReleased() {
				// Unsubscribed during OnNext: the end is not delivered.
			} else if err != nil {
				b.o.OnError(err)
			} else {
				b.o.OnCompleted()
			}
			b.Unsubscribe() // as rx.Finally did: the legs go at once
		}
		b.mu.Lock()
	}
}

// isReleased reports whether the subscription is released.
func (b *bell) isReleased() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.released
}

// state builds the BellState of the legs' current items. An admin whose own
// leg is empty shows exactly the shared Admin leg's state, built once for
// every such admin: it is returned as is (its slices shared, read-only).
func (b *bell) state() BellState {
	if len(b.legs) == 2 && b.legs[0].held == 0 && b.legs[1].shared != nil {
		return b.legs[1].shared.state
	}
	size := 0
	for _, l := range b.legs {
		size += len(l.items)
		if l.shared != nil {
			size += len(l.shared.items)
		}
	}
	all := make([]Notification, 0, size)
	for _, l := range b.legs {
		for _, n := range l.items {
			all = append(all, n)
		}
		if l.shared != nil {
			all = append(all, l.shared.items...)
		}
	}
	return stateOf(all)
}

// stateOf groups the notifications all (which it sorts) into a BellState.
func stateOf(all []Notification) BellState {
	slices.SortFunc(all, newestFirst)
	var st BellState
	index := map[string]int{} // source, by mesh.FoldName → group
	for _, n := range all {
		if !n.IsRead {
			st.Unread++
		}
		key := mesh.FoldName(n.Source())
		gi, ok := index[key]
		if !ok {
			gi = len(st.Groups)
			index[key] = gi
			st.Groups = append(st.Groups, Group{Source: n.Source()})
		}
		st.Groups[gi].Items = append(st.Groups[gi].Items, n)
	}
	return st
}

// newestFirst orders notifications by CreatedAt, newest first, then by
// addressee and id so that the order is total.
func newestFirst(a, b Notification) int {
	return cmp.Or(
		b.CreatedAt.Compare(a.CreatedAt),
		strings.Compare(mesh.FoldName(a.Addressee), mesh.FoldName(b.Addressee)),
		strings.Compare(a.ID, b.ID),
	)
}
