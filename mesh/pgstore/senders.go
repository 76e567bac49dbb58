package pgstore

import (
	"sync"
	"time"
)

// Any role that can connect to the database can NOTIFY, so a row or a
// delete a change notice carries is applied only if its backend runs as
// the listener's own role; any other notice makes the live queries read,
// as a notice always did. The role of a sending backend is looked up once
// per backend process id, on a connection of the pool and on a goroutine
// of its own: the listener never waits for it, and a lookup that is slow
// or fails costs the listener neither its connection nor its queries'
// results. Until the answer is in, the backend's notices are not believed
// (their paths are read). The store's own pool connections are known
// without a lookup, from when the pool opens one until it closes it.

// maxSenders bounds the cache of sending backends.
const maxSenders = 4096

// maxPendingLookups bounds the lookups queued at once; a backend that
// finds the queue full is asked for again on its next notice.
const maxPendingLookups = 64

// sendersLifetime bounds how long an answer is believed: the operating
// system reuses a process id, so a backend of another role may come to
// have one the cache holds.
const sendersLifetime = 10 * time.Second

// senders are the backends whose notices may stand for a read.
type senders struct {
	ask chan uint32 // capacity maxPendingLookups: process ids to look up

	mu      sync.Mutex
	known   map[uint32]bool
	since   time.Time           // when known was last cleared
	pending map[uint32]bool     // queued or being looked up
	own     map[uint32]struct{} // the backends of the store's pool (as many as its connections)
}

func newSenders(now time.Time) *senders {
	return &senders{ask: make(chan uint32, maxPendingLookups), known: map[uint32]bool{}, since: now,
		pending: map[uint32]bool{}, own: map[uint32]struct{}{}}
}

// opened and closed track the store's pool connections (pgxpool's
// AfterConnect and BeforeClose): their role is the store's.
func (c *senders) opened(pid uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.own[pid] = struct{}{}
}

func (c *senders) closed(pid uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.own, pid)
}

// expire forgets every answer older than sendersLifetime; mu is held.
func (c *senders) expire(now time.Time) {
	if now.Sub(c.since) > sendersLifetime {
		clear(c.known)
		c.since = now
	}
}

// trusted returns whether pid's notices may be believed: false until its
// role has been looked up (the lookup is queued here) and found to be the
// store's own.
func (c *senders) trusted(now time.Time, pid uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.own[pid]; ok {
		return true
	}
	c.expire(now)
	if ok, found := c.known[pid]; found {
		return ok
	}
	if !c.pending[pid] {
		select {
		case c.ask <- pid:
			c.pending[pid] = true
		default: // the queue is full: asked for again on pid's next notice
		}
	}
	return false
}

// learn records the answer for pid; found is false when no backend has
// that id any more (nothing is cached, so a later one is looked up).
func (c *senders) learn(now time.Time, pid uint32, ok, found bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, pid)
	if !found {
		return
	}
	c.expire(now)
	if len(c.known) >= maxSenders {
		clear(c.known)
	}
	c.known[pid] = ok
}

// forget drops pid from the lookups in flight after a failed one.
func (c *senders) forget(pid uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, pid)
}

// lookUpSenders is the goroutine answering the listener's questions, one
// lookup at a time, each within Budgets.QueryInitial on a pool connection.
func (s *Store) lookUpSenders() {
	defer s.wg.Done()
	for {
		var pid uint32
		select {
		case <-s.ctx.Done():
			return
		case pid = <-s.senders.ask:
		}
		ctx, cancel, explain := bounded(s.ctx, s.budgets.QueryInitial, "looking up the role of a change notice's sender")
		var ok, found bool
		err := s.pool.QueryRow(ctx, `SELECT coalesce(bool_and(usename = session_user), false), count(*) > 0
			FROM pg_stat_activity WHERE pid = $1`, int32(pid)).Scan(&ok, &found)
		cancel()
		if err != nil {
			s.senders.forget(pid)
			if s.ctx.Err() == nil {
				s.log.Warn("pgstore: looking up the role of a change notice's sender failed; its notices' rows are not believed (their paths are read) until a lookup succeeds",
					"pid", pid, "err", explain(err))
			}
			continue
		}
		s.senders.learn(s.clk.Now(), pid, ok, found)
	}
}
