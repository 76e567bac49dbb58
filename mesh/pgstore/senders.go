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
// without a lookup from when the pool opens one.
//
// An answer describes a backend, and is believed only while that backend
// may still be the one with its process id: for sendersLifetime after it
// was given (the pool's own included, since the server can end one of
// them without the pool noticing), and never past a reconnect of the
// listener, after which the server may be another one (restarted, its
// process ids counting from the start again).

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
	known   map[uint32]sender
	pending map[uint32]bool // queued or being looked up
	// gen counts the resets: a lookup begun before one is not recorded.
	gen uint64
}

// sender is an answer: whether the backend runs as the store's role, and
// when that was known (it is believed for sendersLifetime from then).
type sender struct {
	ok bool
	at time.Time
}

func newSenders() *senders {
	return &senders{ask: make(chan uint32, maxPendingLookups), known: map[uint32]sender{},
		pending: map[uint32]bool{}}
}

// opened records a connection of the store's pool (pgxpool's
// AfterConnect), whose role is the store's, at now. It is not forgotten
// when the pool closes the connection: a fence it sent may still be on its
// way, and the answer expires like any other.
func (c *senders) opened(now time.Time, pid uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.storeLocked(now, pid, sender{ok: true, at: now})
}

// reset forgets every answer, and any lookup begun before it: the listener
// reconnected, maybe to a server whose backends are not those answered
// for.
func (c *senders) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.known)
	c.gen++
}

// begin returns the generation a lookup starting now belongs to.
func (c *senders) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// storeLocked records an answer for pid, keeping known within maxSenders:
// when it is full the expired answers go, and if none has, all of them.
func (c *senders) storeLocked(now time.Time, pid uint32, a sender) {
	if _, in := c.known[pid]; !in && len(c.known) >= maxSenders {
		for p, old := range c.known {
			if now.Sub(old.at) > sendersLifetime {
				delete(c.known, p)
			}
		}
		if len(c.known) >= maxSenders {
			clear(c.known)
		}
	}
	c.known[pid] = a
}

// trusted returns whether pid's notices may be believed: false until its
// role has been looked up (the lookup is queued here) and found to be the
// store's own, and again once that answer is older than sendersLifetime.
func (c *senders) trusted(now time.Time, pid uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, found := c.known[pid]; found {
		if now.Sub(a.at) <= sendersLifetime {
			return a.ok
		}
		delete(c.known, pid)
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

// learn records the answer of a lookup of pid begun at start in
// generation gen; found is false when no backend has that id any more
// (nothing is recorded, so a later one is looked up). An answer from
// before a reset is not recorded, nor one older than that recorded (a
// pool connection opened with that id while the lookup ran).
func (c *senders) learn(gen uint64, start time.Time, pid uint32, ok, found bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, pid)
	if !found || gen != c.gen {
		return
	}
	if a, in := c.known[pid]; in && a.at.After(start) {
		return
	}
	c.storeLocked(start, pid, sender{ok: ok, at: start})
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
		gen, start := s.senders.begin(), s.clk.Now()
		ctx, cancel, explain := s.bounded(s.ctx, s.budgets.QueryInitial, "looking up the role of a change notice's sender")
		var ok, found bool
		err := s.pool.QueryRow(ctx, `-- sender
			SELECT coalesce(bool_and(usename = session_user), false), count(*) > 0
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
		s.senders.learn(gen, start, pid, ok, found)
	}
}
