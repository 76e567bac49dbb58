package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/meshrx/meshrx/registry/client"
)

// The faults of issue 21: writes whose announcement on the change feed
// never arrives (it fails, or the writer dies between its commit and its
// announcement) must be served by every replica within the freshness
// bound all the same, through the volume's journal; and a replica whose
// clock is an hour off must not reorder a module's records.

// unannounced is a record committed without its announcement, and whether
// each other replica listed it within the freshness bound.
type unannounced struct {
	plugin, version, sha256, via, phase string
	at                                  time.Time
	servedWithin                        bool
	took                                time.Duration
}

// watchUnannounced polls every replica but via until each lists
// plugin@version with sha, for at most the freshness bound and a margin,
// and records whether all did within the bound.
func (l *load) watchUnannounced(ctx context.Context, wg *sync.WaitGroup, u unannounced) {
	wg.Go(func() {
		// Its own bound, not the caller's: a publication's context ends
		// when its answer is in.
		deadline := u.at.Add(l.freshness + 5*time.Second)
		ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		defer cancel()
		var others []*replica
		for _, r := range l.replicas {
			if r.name != u.via {
				others = append(others, r)
			}
		}
		for ctx.Err() == nil && time.Now().Before(deadline) {
			all := true
			for _, r := range others {
				if l.listed(ctx, r)[u.plugin+"@"+u.version] != u.sha256 {
					all = false
					break
				}
			}
			if all {
				u.took = time.Since(u.at)
				u.servedWithin = u.took <= l.freshness
				break
			}
			wait(ctx, pollInterval)
		}
		if !u.servedWithin {
			took := "not at all"
			if u.took > 0 {
				took = "only after " + u.took.Round(time.Millisecond).String()
			}
			l.tally.violation("unannounced_not_served", "%s@%s (committed on %s during %q, its announcement lost) was listed by every other replica %s, not within %s",
				u.plugin, u.version, u.via, u.phase, took, l.freshness)
		}
		l.mu.Lock()
		l.unannounced = append(l.unannounced, u)
		l.mu.Unlock()
	})
}

// publishVia publishes plugin@version with archive on r and returns the
// status (0 when the request failed).
func (l *load) publishVia(ctx context.Context, r *replica, plugin, version string, archive []byte) int {
	u := r.baseURL() + client.BundlesPath + "/" + url.PathEscape(plugin) + "?version=" + version + "&tier=free"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(archive))
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	req.Header.Set("Content-Type", "application/zip")
	resp, _, err := do(l.client, req)
	if err != nil {
		return 0
	}
	return resp.StatusCode
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// announceFails makes replica a's announcements fail for d, while the
// publisher goes on: each publication a answers 201 meanwhile is watched
// on the other replica.
func announceFails(d time.Duration) fault {
	return fault{name: fmt.Sprintf("announcements on the change feed fail on replica a for %s", d), inject: func(ctx context.Context, e *env) error {
		a := e.replicas[0]
		if err := a.setControl(controlSilent, true, ""); err != nil {
			return err
		}
		a.silent.Store(true)
		wait(ctx, d)
		a.silent.Store(false)
		return a.setControl(controlSilent, false, "")
	}}
}

// crashAfterCommit makes replica b die (SIGKILL, by its own hand) between a
// publication's commit and its announcement, watches the record on the
// other replica, restarts b and publishes the same bytes again through it:
// "already published" (200), and listed by both.
func crashAfterCommit() fault {
	return fault{name: "replica b dies between a publication's commit and its announcement, then restarts", inject: func(ctx context.Context, e *env) error {
		b := e.replicas[len(e.replicas)-1]
		l := e.load
		b.held.Store(true) // its next announcement must be this fault's
		defer b.held.Store(false)
		wait(ctx, time.Second) // a publication the publisher started on b ends first
		if err := b.setControl(controlCrash, true, ""); err != nil {
			return err
		}
		n := int(time.Now().UnixNano() % 1e6)
		plugin, version := fmt.Sprintf("Faults.Crash%06d", n), "1.0.0"
		archive := bundle(plugin, n)
		status := l.publishVia(ctx, b, plugin, version, archive)
		if !b.awaitExit(replicaBudget) {
			return fmt.Errorf("replica %s did not die at its announcement (publish answered %d)", b.name, status)
		}
		e.out("  replica %s died at the announcement (the publish saw %d)\n", b.name, status)
		l.watchUnannounced(ctx, e.watchers, unannounced{plugin: plugin, version: version, sha256: digestOf(archive), via: b.name,
			phase: l.tally.current(), at: time.Now()})
		if err := b.start(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		if got := l.publishVia(ctx, b, plugin, version, archive); got != http.StatusOK {
			l.tally.violation("republish", "re-publishing %s@%s through the restarted %s answered %d, want 200 (already published)", plugin, version, b.name, got)
		}
		l.mu.Lock()
		l.published = append(l.published, publication{plugin, version, digestOf(archive), l.tally.current(), b.name})
		l.mu.Unlock()
		return nil
	}}
}

// clockSkewed restarts replica b with its clock an hour behind, for the
// rest of the run, and has it publish a module's newer version after
// replica a published the older: the newer must be the one served.
func clockSkewed(by time.Duration) fault {
	return fault{name: fmt.Sprintf("replica b restarted with its clock %s off; a module's newer version published through it", by), inject: func(ctx context.Context, e *env) error {
		a, b := e.replicas[0], e.replicas[len(e.replicas)-1]
		l := e.load
		if err := b.kill(); err != nil {
			return err
		}
		b.skew = by
		if err := b.start(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		n := int(time.Now().UnixNano() % 1e6)
		plugin := fmt.Sprintf("Faults.Skew%06d", n)
		older, newer := bundle(plugin, n), bundle(plugin, n+1)
		if got := l.publishVia(ctx, a, plugin, "1.0.0", older); got != http.StatusCreated {
			return fmt.Errorf("publishing %s 1.0.0 on %s answered %d", plugin, a.name, got)
		}
		if got := l.publishVia(ctx, b, plugin, "2.0.0", newer); got != http.StatusCreated {
			return fmt.Errorf("publishing %s 2.0.0 on %s answered %d", plugin, b.name, got)
		}
		l.mu.Lock()
		l.published = append(l.published, publication{plugin, "2.0.0", digestOf(newer), l.tally.current(), b.name})
		l.mu.Unlock()
		return nil
	}}
}
