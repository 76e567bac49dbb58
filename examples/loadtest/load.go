package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/internal/quantile"
	registryclient "github.com/meshrx/meshrx/registry/client"
)

// load is the consumer side of a run: pollers reading the index on a fixed
// interval, as real consumers do.
//
// The load is OPEN LOOP: every poll is scheduled by the clock at
// start + phase + k×interval, whether or not the poller's earlier polls
// have been answered, and its latency is measured from that scheduled
// instant. A slow registry therefore cannot slow its own load down, and a
// poll that had to wait for a free connection counts the wait.
type load struct {
	url      string // the index URL
	key      string // instance key, sent as a bearer token
	pollers  int
	interval time.Duration
	duration time.Duration
	// grace is how long polls still running at the end of the run may take
	// to finish. A poll still running after it is cut off and counts as
	// unfinished, with its elapsed time.
	grace time.Duration
	// connsPerPoller caps each poller's connections; a poll waiting for one
	// is still timed from its schedule.
	connsPerPoller int
	clk            clock.Clock
	// etag is the ETag every poller holds when the run starts (as consumers
	// at steady state hold the document they downloaded); "" starts cold.
	etag string
	// deltas: a poller asks for what changed since the document it holds
	// (client.SinceParam), as registry/client does, and fetches the whole
	// document after a 410; false: it revalidates with If-None-Match and
	// downloads the whole document after every change.
	deltas bool
}

// sample is one poll's outcome.
type sample struct {
	latency    time.Duration // from the scheduled instant to the end (or the cut-off)
	status     int           // 0 when no answer arrived
	unfinished bool          // still running at the end and cut off
	err        error
	bytes      int64 // body bytes received (both answers after a 410)
	gone       bool  // the delta was answered 410 and the whole document fetched
}

func (s sample) failed() bool {
	return s.err != nil || (s.status != http.StatusOK && s.status != http.StatusNotModified)
}

// run polls from start until start+duration, then waits at most grace for
// polls still running, and returns every scheduled poll's sample: none is
// dropped.
func (l load) run(ctx context.Context, start time.Time) []sample {
	end := start.Add(l.duration)
	cutoff, cancel := l.clk.WithDeadline(ctx, end.Add(l.grace))
	defer cancel()

	var (
		mu      sync.Mutex
		samples []sample
		polls   sync.WaitGroup
		poller  sync.WaitGroup
	)
	record := func(s sample) {
		mu.Lock()
		samples = append(samples, s)
		mu.Unlock()
	}
	transports := make([]*http.Transport, l.pollers)
	// Each poller's requests hang off a context of its own: with every
	// poll a child of cutoff, each request's context registration
	// (net/http's roundTrip derives one) contended for cutoff's one lock and
	// its map of children, and the load generator, which runs in the
	// registry's process, spent a quarter of the CPU there (profile of 10,000
	// modules × 256 pollers).
	cancels := make([]context.CancelFunc, l.pollers)
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for p := range l.pollers {
		pollerCtx, cancelPoller := context.WithCancel(cutoff)
		cancels[p] = cancelPoller
		transports[p] = &http.Transport{MaxConnsPerHost: l.connsPerPoller, MaxIdleConnsPerHost: l.connsPerPoller}
		client := &http.Client{Transport: transports[p]}
		phase := l.interval * time.Duration(p) / time.Duration(l.pollers)
		var etag etagBox
		etag.set(l.etag)
		poller.Go(func() {
			for k := 0; ; k++ {
				at := start.Add(phase + time.Duration(k)*l.interval)
				if !at.Before(end) || !l.waitUntil(pollerCtx, at) {
					return
				}
				polls.Go(func() { record(l.poll(pollerCtx, client, &etag, at)) })
			}
		})
	}
	poller.Wait()
	polls.Wait() // every poll ends by the cut-off at the latest
	for _, t := range transports {
		t.CloseIdleConnections()
	}
	return samples
}

// waitUntil waits for the clock to reach at; false if ctx ended first.
func (l load) waitUntil(ctx context.Context, at time.Time) bool {
	d := l.clk.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := l.clk.Timer(d)
	defer t.Stop()
	if !l.clk.Now().Before(at) {
		// The clock passed at between Until and Timer (another goroutine
		// advanced it): the timer is due later than at, perhaps past the
		// end of a virtual run.
		return ctx.Err() == nil
	}
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// poll makes one index request scheduled at at, bounded by ctx (the run's
// cut-off), as a consumer that keeps the ETag it was last given: with
// deltas, it asks for what changed since, and fetches the whole document
// after a 410.
func (l load) poll(ctx context.Context, client *http.Client, etag *etagBox, at time.Time) sample {
	tag := etag.get()
	var s sample
	u := l.url
	if l.deltas && tag != "" {
		u += "?" + registryclient.SinceParam + "=" + strings.Trim(tag, `"`)
	}
	status, newTag, n, err := l.get(ctx, client, u, tag)
	s.bytes += n
	if err == nil && status == http.StatusGone {
		s.gone = true
		status, newTag, n, err = l.get(ctx, client, l.url, "")
		s.bytes += n
	}
	if err == nil && status == http.StatusOK && newTag != "" {
		etag.set(newTag)
	}
	s.latency, s.err, s.status = l.clk.Since(at), err, status
	if err != nil && ctx.Err() != nil {
		s.unfinished = true
		s.err = fmt.Errorf("still running at the end of the run plus %s: %w", l.grace, err)
	}
	return s
}

// get makes one GET of u (with If-None-Match: ifNoneMatch unless it asks
// for a delta) and reads the body.
func (l load) get(ctx context.Context, client *http.Client, u, ifNoneMatch string) (status int, etag string, n int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", 0, err
	}
	req.Header.Set("Authorization", "Bearer "+l.key)
	if ifNoneMatch != "" && !strings.Contains(u, "?") {
		req.Header.Set("If-None-Match", ifNoneMatch)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", 0, err
	}
	defer resp.Body.Close()
	n, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("ETag"), n, err
}

// etagBox is one poller's last ETag.
type etagBox struct {
	mu  sync.Mutex
	tag string
}

func (e *etagBox) get() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tag
}

func (e *etagBox) set(tag string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tag = tag
}

// stats summarises one mode's samples.
type stats struct {
	requests, errors, unfinished int
	p50, p90, p99, p999, max     time.Duration
	// changed counts the polls answered with a document or a delta (200),
	// changedBytes their bodies; bytes is every poll's body bytes; gone the
	// deltas answered 410.
	changed, gone       int
	changedBytes, bytes int64
}

// bytesPerChange is the mean body of a poll that found a change.
func (st stats) bytesPerChange() int64 {
	if st.changed == 0 {
		return 0
	}
	return st.changedBytes / int64(st.changed)
}

func summarize(samples []sample) stats {
	st := stats{requests: len(samples)}
	lat := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		lat = append(lat, s.latency)
		if s.failed() {
			st.errors++
		}
		if s.unfinished {
			st.unfinished++
		}
		st.bytes += s.bytes
		if s.status == http.StatusOK {
			st.changed++
			st.changedBytes += s.bytes
		}
		if s.gone {
			st.gone++
		}
	}
	slices.Sort(lat)
	st.p50, st.p90, st.p99, st.p999 = quantile.Sorted(lat, 0.500), quantile.Sorted(lat, 0.900), quantile.Sorted(lat, 0.990), quantile.Sorted(lat, 0.999)
	if len(lat) > 0 {
		st.max = lat[len(lat)-1]
	}
	return st
}
