package pgstore

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// panicOnce is a QueryTracer (the seam Options gives every user) that
// panics once, at the start of the first write statement (INSERT, UPDATE,
// DELETE) run on a context carrying panicWriteKey.
type panicOnce struct{ spent atomic.Bool }

type panicWriteKey struct{}

func (p *panicOnce) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	sql := strings.TrimSpace(d.SQL)
	write := strings.HasPrefix(sql, "INSERT") || strings.HasPrefix(sql, "UPDATE") || strings.HasPrefix(sql, "DELETE")
	if write && ctx.Value(panicWriteKey{}) != nil && p.spent.CompareAndSwap(false, true) {
		panic("tracer panicked")
	}
	return ctx
}

func (p *panicOnce) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A write whose statement panics (here in a user's QueryTracer; the caller
// recovers, as net/http does) gives its pool connection back: afterwards
// the pool holds no acquired connection, and with a pool of one the next
// write still gets one (bounded by a context) and the store closes (a
// bounded wait). Put, PutIfVersion and Delete alike.
//
// Negative control (run): with Delete's conn.Release() called after
// conn.Exec instead of deferred (as before), the "delete" row failed: one
// connection stayed acquired and the next write's wait for a connection
// ran out.
func TestAWriteThatPanicsGivesItsConnectionBackToThePool(t *testing.T) {
	t.Parallel()
	const path = "acme/Docs/a"
	for _, c := range []struct {
		name  string
		write func(context.Context, *Store) error
	}{
		{"put", func(ctx context.Context, s *Store) error {
			_, err := s.Put(ctx, mesh.Node{Path: path, NodeType: "Article", Content: json.RawMessage(`{"v":2}`)})
			return err
		}},
		{"put if version", func(ctx context.Context, s *Store) error {
			_, err := s.PutIfVersion(ctx, mesh.Node{Path: path, NodeType: "Article", Content: json.RawMessage(`{"v":2}`)}, 1)
			return err
		}},
		{"delete", func(ctx context.Context, s *Store) error {
			return s.Delete(ctx, path)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := pg.Database(t)
			tracer := &panicOnce{}
			ctx := testContext(t)
			s, err := Open(ctx, url, Options{MaxConns: 1, QueryTracer: tracer})
			require.NoError(t, err)
			closed := make(chan error, 1)
			t.Cleanup(func() {
				go func() { closed <- s.Close() }()
				assert.NoError(t, receive(t, closed, "the store to close"))
			})
			put(t, s, mesh.Node{Path: path, NodeType: "Article", Content: json.RawMessage(`{"v":1}`)})

			recovered := func() (r any) {
				defer func() { r = recover() }()
				_ = c.write(context.WithValue(ctx, panicWriteKey{}, true), s)
				return nil
			}()
			require.Equal(t, "tracer panicked", recovered, "the write's statement panicked")
			assert.Zero(t, s.pool.Stat().AcquiredConns(), "no connection stays acquired")

			next, cancel := context.WithTimeout(ctx, 10*time.Second) // ample for a free connection
			defer cancel()
			_, err = s.Put(next, mesh.Node{Path: "acme/Docs/next", NodeType: "Article"})
			require.NoError(t, err, "the next write gets the pool's one connection")
		})
	}
}
