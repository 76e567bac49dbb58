package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/meshrx/meshrx/registry/client"
)

// verifyPublications waits, at most budget, until both replicas list every
// publication that answered 201 with its sha256, then downloads each from
// both; it returns how many are missing or download wrong.
func (l *load) verifyPublications(ctx context.Context, budget time.Duration) int64 {
	l.mu.Lock()
	pubs := append([]publication(nil), l.published...)
	l.mu.Unlock()
	deadline := time.Now().Add(budget)
	var missing map[int][]string // publication → replicas not listing it
	for {
		missing = map[int][]string{}
		for _, r := range l.replicas {
			listed := l.listed(ctx, r)
			for i, p := range pubs {
				if listed[p.plugin+"@"+p.version] != p.sha256 {
					missing[i] = append(missing[i], r.name)
				}
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		wait(ctx, time.Second)
	}
	lost := int64(0)
	for i, p := range pubs {
		if where, ok := missing[i]; ok {
			lost++
			l.tally.violation("lost_publication", "%s@%s (published on %s during %q) not listed by %v within %s",
				p.plugin, p.version, p.via, p.phase, where, budget)
			continue
		}
		for _, r := range l.replicas {
			u := r.baseURL() + client.BundlesPath + "/" + url.PathEscape(p.plugin) + "/" + url.PathEscape(p.version)
			resp, body, err := l.get(ctx, u, "")
			if !l.tally.classify("verifying download on "+r.name, resp, body, err) || !sameSHA(body, p.sha256) {
				lost++
				l.tally.violation("lost_publication", "%s@%s (published on %s during %q) does not download with its sha256 from %s",
					p.plugin, p.version, p.via, p.phase, r.name)
				break
			}
		}
	}
	fmt.Fprintf(l.tally.out, "  publications answered 201: %d; lost: %d\n", len(pubs), lost)
	return lost
}

// listed returns plugin@version → sha256 from a replica's index.
func (l *load) listed(ctx context.Context, r *replica) map[string]string {
	rctx, cancel := context.WithTimeout(ctx, requestBudget)
	defer cancel()
	resp, body, err := l.get(rctx, r.baseURL()+client.IndexPath, "")
	if !l.tally.classify("verifying index on "+r.name, resp, body, err) || resp.StatusCode != http.StatusOK {
		return nil
	}
	var idx client.Index
	if json.Unmarshal(body, &idx) != nil {
		return nil
	}
	out := make(map[string]string, len(idx.Bundles))
	for _, e := range idx.Bundles {
		out[e.Plugin+"@"+e.Version] = e.SHA256
	}
	return out
}

// verifyNotifications waits, at most budget, until the bell shows every
// notification Create reported delivered exactly once; it returns how many
// do not.
func (l *load) verifyNotifications(ctx context.Context, budget time.Duration) int64 {
	l.mu.Lock()
	notes := append([]created(nil), l.notified...)
	l.mu.Unlock()
	deadline := time.Now().Add(budget)
	var bad []string
	for {
		ids := l.bell.ids()
		bad = bad[:0]
		for _, n := range notes {
			if c := ids[n.id]; c != 1 {
				bad = append(bad, fmt.Sprintf("%s (created through %s during %q) shown %d times", n.id, n.via, n.phase, c))
			}
		}
		if len(bad) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		wait(ctx, 500*time.Millisecond)
	}
	for _, b := range bad {
		l.tally.violation("lost_notification", "%s", b)
	}
	l.bell.mu.Lock()
	frames, failures := l.bell.frames, l.bell.failures
	l.bell.mu.Unlock()
	fmt.Fprintf(l.tally.out, "  notifications created: %d; not in the bell exactly once: %d (bell frames %d, bell failures resubscribed %d)\n",
		len(notes), len(bad), frames, failures)
	return int64(len(bad))
}

// verifyLiveQueries compares each live query's state with a fresh read,
// allowing budget for frames in flight; it returns the queries that differ.
func (l *load) verifyLiveQueries(ctx context.Context, budget time.Duration) int64 {
	gaps := int64(0)
	for _, w := range l.lives {
		deadline := time.Now().Add(budget)
		var g string
		for {
			rctx, cancel := context.WithTimeout(ctx, requestBudget)
			g = w.gap(rctx)
			cancel()
			if g == "" || time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			wait(ctx, 500*time.Millisecond)
		}
		w.mu.Lock()
		frames, resets, ends, initials, size := w.frames, w.resets, w.ends, w.initials, len(w.state)
		w.mu.Unlock()
		if g != "" {
			gaps++
			l.tally.violation("silent_gap", "live query on %s: %s", w.r.name, g)
		}
		fmt.Fprintf(l.tally.out, "  live query on %s: %d frames (%d Initial, %d Reset), ended and resubscribed %d times, %d nodes; %s\n",
			w.r.name, frames, initials, resets, ends, size, map[bool]string{true: "equals a fresh read", false: "DIFFERS from a fresh read"}[g == ""])
	}
	return gaps
}

// report prints the per-phase table, then the summary line last.
func report(w io.Writer, t *tally, l *load, s summary, gBefore, gAfter int, rssBefore, rssAfter float64) {
	fmt.Fprintf(w, "\n%-78s %10s %8s %8s %5s %4s %4s %4s %6s %8s\n", "phase", "recovery", "feed", "requests", "503", "401", "ra", "5xx", "unreach", "max_down")
	t.mu.Lock()
	for _, p := range t.phases {
		rec, feed := "", ""
		if p.name != "warm-up" && p.name != "verification" && p.note == "" {
			rec, feed = seconds(p.recovery), seconds(p.feedBack)
		}
		if p.note != "" {
			rec = "skipped"
		}
		c := p.counts
		fmt.Fprintf(w, "%-78s %10s %8s %8d %5d %4d %4d %4d %6d %7.1fs\n", p.name, rec, feed, c.requests, c.unavailable, c.wrong401, c.retryAfterMissing, c.other5xx, c.unreachable, c.maxUnavailable.Seconds())
	}
	t.mu.Unlock()
	fmt.Fprintf(w, "readyz: 200 while the database was held down %.1fs; answered 404 (no /readyz) %d times\n", s.readyzOKWhileDown.Seconds(), s.readyzMissing)
	fmt.Fprintf(w, "goroutines %d → %d (load stopped); RSS %.1f → %.1f MB (under load)\n", gBefore, gAfter, rssBefore, rssAfter)
	for _, r := range l.replicas {
		if store, _ := r.current(); store != nil {
			st := store.Stats()
			fmt.Fprintf(w, "replica %s store (since its last start): reconnects %d, resets %d, reads retried after a lost connection %d\n", r.name, st.Reconnects, st.Resets, st.RetriedReads)
		}
	}
	fmt.Fprintln(w, s.String())
}
