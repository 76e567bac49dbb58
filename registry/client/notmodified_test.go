package client

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// A 304 to a request that named no ETag (a confused cache or proxy in
// front of the registry) is an answer the client cannot use, not "the
// index you hold": the caller holds none. Before, Index returned
// ErrNotModified to a caller that had passed no ETag, and a Reconciler's
// first poll took it as success: Healthy, nothing applied, the catalogue
// quietly empty. Negative control: without fullIndex's check, Index
// returns ErrNotModified and the poll is Healthy.
func TestA304ToARequestWithoutAnETagIsAnErrorAndFailsThePoll(t *testing.T) {
	srv := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotModified)
	})
	c := newTestClient(t, srv.Server, Options{})

	_, _, err := c.Index(boundedContext(t), "")
	var re *ResponseError
	assert.ErrorAs(t, err, &re)
	assert.NotErrorIs(t, err, ErrNotModified)

	polls := make(chan ReconcilerStatus, 1)
	r := &Reconciler{
		Client: c, Clock: rxtest.NewClock(), Logger: slog.New(slog.DiscardHandler), TempDir: t.TempDir(),
		Apply:  func(context.Context, IndexEntry, io.Reader) error { return nil },
		Polled: func(st ReconcilerStatus) { polls <- st },
	}
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Bound)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	st := testkit.Receive(t, polls, "the first poll")
	cancel()
	assert.ErrorIs(t, testkit.Receive(t, done, "Run returning once stopped"), context.Canceled)
	assert.False(t, st.Healthy, "a poll that read no index is not a success")
	assert.Contains(t, st.LastError, "304")
}
