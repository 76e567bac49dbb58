package mesh_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// scriptedBackend is a Backend whose partitions the test sets and whose
// live reads come from a scripted provider; it records where each was asked
// to read.
type scriptedBackend struct {
	partitions []string
	err        error
	reads      *scripted
	reaches    []mesh.Reach
}

func (b *scriptedBackend) Name() string { return "backend" }

func (b *scriptedBackend) Partitions(*mesh.Query) ([]string, error) { return b.partitions, b.err }

func (b *scriptedBackend) Watch(q *mesh.Query, reach mesh.Reach) rx.Observable[mesh.Change] {
	b.reaches = append(b.reaches, reach)
	return b.reads.Query(q)
}

func newQuerier(t *testing.T, b mesh.Backend, providers ...mesh.Provider) *mesh.Querier {
	t.Helper()
	router, err := mesh.NewRouter(mesh.RouterConfig{})
	require.NoError(t, err)
	return &mesh.Querier{Backend: b, Router: router, Providers: providers, Clock: rxtest.NewClock(), InitialBudget: time.Second}
}

func TestTheQuerierReadsAnAnchoredQueryOnlyWhereItIsAnchoredAndAnUnroutableOneNowhere(t *testing.T) {
	b := &scriptedBackend{partitions: []string{"acme", "globex"}, reads: newScripted("backend")}
	b.reads.frames.OnNext(mesh.Change{Kind: mesh.Initial, Partitions: []string{"acme"}})
	qr := newQuerier(t, b)
	clk := rxtest.NewClock()

	rec := rxtest.Record(clk, qr.Query("path:_Unregistered/x"))
	require.Len(t, rec.Values(), 1)
	assert.Equal(t, mesh.Initial, rec.Values()[0].Kind)
	assert.True(t, rec.Completed(), "nothing can ever be stored there")
	assert.Empty(t, b.reaches, "the backend was not asked")

	// Control: an anchored query reaches the backend, pinned to its schema.
	rxtest.Record(clk, qr.Query("namespace:acme/Docs nodeType:Article"))
	require.Len(t, b.reaches, 1)
	assert.Equal(t, mesh.Reach{Route: b.reaches[0].Route, Schemas: []string{"acme"}}, b.reaches[0])
	// An unanchored fan-out reads every partition, as known at each read.
	rxtest.Record(clk, qr.Query("nodeType:Article partitions:all"))
	require.Len(t, b.reaches, 2)
	assert.True(t, b.reaches[1].AllPartitions)
}

func TestTheQuerierEndsWithTheBackendsErrorWhenItCannotServe(t *testing.T) {
	closed := &mesh.UnavailableError{Op: "query", Err: errors.New("closed")}
	b := &scriptedBackend{err: closed, reads: newScripted("backend")}
	rec := rxtest.Record(rxtest.NewClock(), newQuerier(t, b).Query("path:acme/x"))
	assert.True(t, mesh.IsUnavailable(rec.Err()))
	assert.Empty(t, b.reaches)

	// A query that does not parse fails as such, whatever the backend.
	rec = rxtest.Record(rxtest.NewClock(), newQuerier(t, b).Query("nodeTyp:Article"))
	var pe *mesh.ParseError
	assert.ErrorAs(t, rec.Err(), &pe)
}

func TestUntilEndsAQueryWhoseProvidersStayLive(t *testing.T) {
	run := func(withUntil bool) *rxtest.Recorder[mesh.Change] {
		b := &scriptedBackend{partitions: []string{"acme"}, reads: newScripted("backend")}
		b.reads.frames.OnNext(mesh.Change{Kind: mesh.Initial})
		static := newScripted("static")
		static.frames.OnNext(mesh.Change{Kind: mesh.Initial})
		qr := newQuerier(t, b, static)
		closing := rx.NewAsyncSubject[struct{}]()
		if withUntil {
			qr.Until = closing
		}
		rec := rxtest.Record(rxtest.NewClock(), qr.Query("path:acme/x"))
		closing.OnNext(struct{}{})
		closing.OnCompleted()
		return rec
	}
	assert.True(t, run(true).Completed(), "closing ends the query")
	// Negative control: without Until the live providers keep it open.
	rec := run(false)
	assert.False(t, rec.Completed())
	rec.Unsubscribe()
}
