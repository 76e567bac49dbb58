package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/internal/mailbox"
)

// connectListener opens the listener's own connection and subscribes it to
// NotifyChannel, within Budgets.QueryInitial.
func (s *Store) connectListener(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel, explain := s.bounded(ctx, s.budgets.QueryInitial, "connecting the change listener")
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, s.listenCfg)
	if err != nil {
		return nil, fmt.Errorf("connecting the change listener: %w", explain(err))
	}
	for _, channel := range []string{NotifyChannel, s.fences.channel} {
		if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
			s.closeConn(conn)
			return nil, fmt.Errorf("listening on %s: %w", channel, explain(err))
		}
	}
	return conn, nil
}

func (s *Store) closeConn(conn *pgx.Conn) {
	ctx, cancel := s.clk.WithTimeout(context.Background(), s.budgets.QueryInitial)
	defer cancel()
	_ = conn.Close(ctx)
}

// listen is the listener's goroutine: it turns notifications into change
// notices and re-reads, and when the connection fails it reconnects with
// backoff on the store's clock, reloads the known schemas, resets every
// live query and sends Changes subscribers a gap notice, since notices
// sent during the gap are lost.
func (s *Store) listen(conn *pgx.Conn) {
	defer s.wg.Done()
	for {
		err := s.receive(conn)
		s.closeConn(conn)
		if s.ctx.Err() != nil {
			return
		}
		conn = s.reconnect(err)
		if conn == nil {
			return // closed while reconnecting
		}
		// The server may have restarted, its new backends taking the
		// process ids the answers are about.
		s.senders.reset()
		n := s.reconnects.Add(1)
		s.feed.OnNext(FeedState{Connected: true, Reconnects: n})
		s.resetAll("the change feed was lost; notices sent while it was down are gone", err, n)
		// Changes subscribers too: one gap notice stands for the lost ones.
		s.announce(mailbox.Gap)
	}
}

// receive handles notifications until the connection fails or the store
// closes. The connection serves the listener alone: it waits for
// notifications and runs nothing else, so nothing but the connection
// itself can end it. Close ends the wait by closing it.
func (s *Store) receive(conn *pgx.Conn) error {
	stop := context.AfterFunc(s.ctx, func() { _ = conn.PgConn().Conn().Close() })
	defer stop()
	// Notices come when others write, so silence proves nothing: after
	// FeedCheck without a read the connection is pinged (check). A
	// connection lost without a FIN or RST thus ends within FeedCheck and
	// a read's budget, not when TCP keepalive gives up minutes later. (The
	// listener's connection cancels by deadline, pgx's default, so a wait
	// cut short leaves it usable.)
	quiet := s.watchSilence()
	defer quiet.stop()
	for {
		wait := quiet.context()
		n, err := conn.WaitForNotification(wait)
		if err != nil {
			if s.ctx.Err() != nil {
				return s.ctx.Err()
			}
			if wait.Err() != nil { // silent for FeedCheck
				if err := s.check(conn); err != nil {
					return err
				}
				quiet.rearm()
				continue
			}
			return err
		}
		at := s.lastRead.Load()
		if n.Channel == s.fences.channel {
			if s.senders.trusted(s.clk.Now(), n.PID) {
				s.fences.received(n.Payload)
			}
			continue
		}
		pid := n.PID
		s.handle(n.Payload, at, func() bool { return s.senders.trusted(s.clk.Now(), pid) })
	}
}

// silence is the listener's bound on a silent connection: one timer on the
// store's clock while the connection is received, and a context that the
// timer cancels once the connection has read nothing for FeedCheck. A
// notice costs it nothing (its read is stamped anyway, lastRead): when the
// timer fires after a read, it re-arms for what is left of FeedCheck since
// that read. A busy connection so costs one timer per FeedCheck, not a
// context and a timer per notice, and a silent one is still cut at
// FeedCheck after its last read.
type silence struct {
	s *Store

	mu        sync.Mutex
	ctx       context.Context // ends when the connection has been silent for FeedCheck
	cancel    context.CancelFunc
	stopTimer func() bool // nil once the timer has cancelled ctx
	stopped   bool
}

// watchSilence starts the bound of a connection that has just read.
func (s *Store) watchSilence() *silence {
	w := &silence{s: s}
	w.rearm()
	return w
}

// context returns what the listener's wait is bounded by now.
func (w *silence) context() context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ctx
}

// rearm starts a new bound, FeedCheck from now: at the start, and after a
// silence the connection answered (its ping's answer was its last read).
func (w *silence) rearm() {
	ctx, cancel := context.WithCancel(context.Background())
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopTimer != nil {
		w.stopTimer()
	}
	if w.cancel != nil {
		w.cancel()
	}
	w.ctx, w.cancel = ctx, cancel
	w.stopTimer = afterOn(w.s.clk, w.s.feedCheck, w.fire)
}

// fire is the timer: it ends the bound if the connection has not read for
// FeedCheck, or re-arms for the rest of FeedCheck since its last read.
func (w *silence) fire() {
	left := w.s.feedCheck - w.s.sinceStamp(w.s.lastRead.Load())
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if left > 0 {
		w.stopTimer = afterOn(w.s.clk, left, w.fire)
		return
	}
	w.stopTimer = nil
	w.cancel()
}

// stop ends the bound and its timer.
func (w *silence) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.stopTimer != nil {
		w.stopTimer()
	}
	w.cancel()
}

// check pings the listener's silent connection, within Budgets.QueryInitial
// on the store's clock (a server slower than a read's budget counts as
// gone): an error ends the connection (listen reconnects). Notices that
// arrive meanwhile are kept by pgx for the next wait.
func (s *Store) check(conn *pgx.Conn) error {
	ctx, cancel := s.clk.WithTimeout(s.ctx, s.budgets.QueryInitial)
	defer cancel()
	if err := conn.Ping(ctx); err != nil {
		if s.ctx.Err() != nil {
			return s.ctx.Err()
		}
		what := fmt.Sprintf("pinging the change listener's connection (silent for %s)", s.feedCheck)
		if ctx.Err() != nil {
			return &BudgetError{What: what, Budget: s.budgets.QueryInitial, Err: err}
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// stampedConn is the listener's connection to the server; it notes when
// each read returned: when the notices in it arrived (Store.lastRead).
type stampedConn struct {
	net.Conn
	s *Store
}

func (c *stampedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.s.lastRead.Store(c.s.stamp())
	}
	return n, err
}

// stamp returns the store's clock as a number: time since Open.
func (s *Store) stamp() int64 { return int64(s.clk.Now().Sub(s.epoch)) }

// sinceStamp returns the time from stamp at to now.
func (s *Store) sinceStamp(at int64) time.Duration { return time.Duration(s.stamp() - at) }

// reconnect waits and retries until a connection listens again (with the
// known schemas reloaded on it) or the store closes (nil).
func (s *Store) reconnect(cause error) *pgx.Conn {
	delay := MinReconnectDelay
	for {
		// The timer is armed before the state is published, so whoever reacts
		// to the state (a test advancing a virtual clock) cannot outrun it.
		timer := s.clk.Timer(delay)
		s.log.Warn("pgstore: change feed lost; live queries wait for it", "err", cause, "retryIn", delay)
		s.feed.OnNext(FeedState{Connected: false, Reconnects: s.reconnects.Load(), Err: cause, RetryIn: delay})
		select {
		case <-s.ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		conn, err := s.connectListener(s.ctx)
		if err == nil {
			ctx, cancel, explain := s.bounded(s.ctx, s.budgets.QueryInitial, "reloading the node schemas")
			err = explain(s.schemas.load(ctx, conn))
			cancel()
			if err == nil {
				return conn
			}
			err = fmt.Errorf("reloading the node schemas: %w", err)
			s.closeConn(conn)
		}
		if s.ctx.Err() != nil {
			return nil
		}
		cause = err
		delay = min(2*delay, MaxReconnectDelay)
	}
}

// notice is the payload the notify triggers send.
type notice struct {
	Path     *string         `json:"path"`
	Op       string          `json:"op"`
	NodeType *string         `json:"node_type"`
	Row      json.RawMessage `json:"row"` // migration 0005: the written row, when it fits; decoded in carried, so a row this build cannot read costs a read of its path, not of every live query
}

// handle settles one notification: it updates the known schemas, makes the
// live queries it can concern re-read (or patch their results with the
// row it carries, if trusted says its sender may be believed), and
// announces it on Changes. A payload it cannot read re-reads every live
// query (fail-safe).
func (s *Store) handle(payload string, at int64, trusted func() bool) {
	s.notices.Add(1)
	defer func() { s.noticeDispatch.observe(s.sinceStamp(at)) }()
	var n notice
	op, opOK := mesh.WriteOp(0), false
	if err := json.Unmarshal([]byte(payload), &n); err == nil {
		op, opOK = mesh.ParseWriteOp(n.Op)
	}
	if !opOK || n.Path == nil || *n.Path == "" {
		s.log.Warn("pgstore: unreadable change notice; every live query re-reads", "payload", clip(payload, 200))
		s.dispatchAll(at)
		return
	}
	path := *n.Path
	nodeType, typed := "", false
	if n.NodeType != nil {
		nodeType, typed = *n.NodeType, true
	}
	schema, global, err := s.schemaFor(path)
	if err != nil {
		s.log.Warn("pgstore: change notice for a path no schema holds; every live query re-reads", "path", path, "err", err)
		s.dispatchAll(at)
	} else {
		if global {
			s.schemas.addGlobal(schema)
		} else {
			s.schemas.addPartition(schema)
		}
		var row *written
		if row = n.carried(op, path); row != nil && !trusted() {
			row = nil
		}
		s.dispatch(schema, !global, path, nodeType, typed, row, at)
	}
	s.announce(mesh.ChangeNotice{Path: path, Op: op, NodeType: nodeType})
}

// carried returns what the notice says of path without a read: that it
// was deleted, or the row it carried; nil when it says neither.
func (n *notice) carried(op mesh.WriteOp, path string) *written {
	if op == mesh.WriteDelete {
		return &written{carried: true, gone: true}
	}
	if len(n.Row) == 0 {
		return nil
	}
	var r *noticeRow
	if err := json.Unmarshal(n.Row, &r); err != nil {
		return nil
	}
	node, ok := r.node()
	if !ok || node.Path != path {
		return nil
	}
	return &written{carried: true, node: node}
}

// dispatchAll makes every live query re-read, for a notice that arrived
// at at.
func (s *Store) dispatchAll(at int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.live.All(func(lq *liveQuery) {
		s.requeries.Add(1)
		if lq.owe(pendingDiff, "", nil, 0, at) {
			s.startLocked(lq)
		}
	})
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
