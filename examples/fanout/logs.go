package main

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// fanOutWarning is the message the router logs for every fan-out it routes.
const fanOutWarning = "mesh: unanchored query fans out over partition schemas"

// quietFanOuts is a slog.Handler that counts the router's per-fan-out
// warning instead of printing it (this program runs thousands of fan-outs
// on purpose) and passes every other record on.
type quietFanOuts struct {
	next    slog.Handler
	dropped *atomic.Int64
}

func newQuietFanOuts(next slog.Handler) *quietFanOuts {
	return &quietFanOuts{next: next, dropped: new(atomic.Int64)}
}

func (h *quietFanOuts) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *quietFanOuts) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == fanOutWarning {
		h.dropped.Add(1)
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *quietFanOuts) WithAttrs(as []slog.Attr) slog.Handler {
	return &quietFanOuts{next: h.next.WithAttrs(as), dropped: h.dropped}
}

func (h *quietFanOuts) WithGroup(name string) slog.Handler {
	return &quietFanOuts{next: h.next.WithGroup(name), dropped: h.dropped}
}

// fanOutsLogged returns how many fan-out warnings were counted.
func (h *quietFanOuts) fanOutsLogged() int64 { return h.dropped.Load() }
