package pgstore

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/meshrx/meshrx/mesh"
)

// A read whose connection the server closed under it (pg_terminate_backend,
// a fast restart, an idle-session timeout) says nothing about the database
// now: the pool may hold more connections to the old backend, and a new one
// may answer. Such a read runs once more after the pool has dropped its
// connections, so it gets a fresh one; a second failure is the answer. Reads
// only: a write that lost its connection may have committed.

// connectionLost reports whether err says the server closed the connection
// a statement ran on, as opposed to refusing the statement or the caller
// giving up.
func connectionLost(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch pgCode(err) {
	case "57P01", "57P02": // admin_shutdown (terminated or fast shutdown), crash_shutdown
		return true
	case "":
	default:
		return false // the server answered the statement
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// retryLost runs read, and once more on a fresh connection when the first
// attempt's connection was closed by the server. ctx bounds both.
func retryLost[T any](ctx context.Context, s *Store, read func() (T, error)) (T, error) {
	v, err := read()
	if !connectionLost(err) || ctx.Err() != nil {
		return v, err
	}
	s.lostReads.Add(1)
	s.log.Info("pgstore: the server closed a read's connection; reading once more on a fresh one", "err", err)
	s.pool.Reset() // idle connections to the same backend generation are likely gone too
	return read()
}

// readRetrying is read with one retry of a lost connection.
func (s *Store) readRetrying(ctx context.Context, q *mesh.Query, p plan) ([]mesh.Node, []string, error) {
	type result struct {
		nodes   []mesh.Node
		covered []string
	}
	r, err := retryLost(ctx, s, func() (result, error) {
		nodes, covered, err := s.read(ctx, q, p)
		return result{nodes, covered}, err
	})
	return r.nodes, r.covered, err
}

// getRetrying is get with one retry of a lost connection.
func (s *Store) getRetrying(ctx context.Context, path string) (mesh.Node, bool, error) {
	type result struct {
		node mesh.Node
		ok   bool
	}
	r, err := retryLost(ctx, s, func() (result, error) {
		n, ok, err := s.get(ctx, path)
		return result{n, ok}, err
	})
	return r.node, r.ok, err
}
