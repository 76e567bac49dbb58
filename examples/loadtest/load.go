package main

import (
	"context"
	"fmt"
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
//
// The first warmup of the run is polled like the rest but summarised apart
// (stats.warm), and the pollers join one after another over it (poller p
// at warmup×p/pollers): consumers at steady state hold their connections,
// and the registry's connections, their goroutines and the heap they need
// exist. Without it, 256 pollers dialling at once made every poll of the
// first ~0.8 s wait 30-270 ms (10,000 modules, load 4), which alone set
// p99, and on a busier machine started a pile-up the open loop took 12 s
// to drain.
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
	// warmup is polled before the measured duration, and its polls are
	// marked warm (see load).
	warmup time.Duration
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
	at      time.Time     // the scheduled instant
	latency time.Duration // from the scheduled instant to the end (or the cut-off)
	// written is when the (first) request was written, from the
	// scheduled instant (-1: never): what went before is the pollers'
	// process's (a goroutine to run, a connection), what came after the
	// registry's answer and its reading.
	written    time.Duration
	status     int  // 0 when no answer arrived
	unfinished bool // still running at the end and cut off
	err        error
	bytes      int64 // body bytes received (both answers after a 410)
	gone       bool  // the delta was answered 410 and the whole document fetched
	warm       bool  // scheduled in the warm-up, before the measured run
}

func (s sample) failed() bool {
	return s.err != nil || (s.status != http.StatusOK && s.status != http.StatusNotModified)
}

// run polls from start until start+warmup+duration (the measured run
// begins at start+warmup), then waits at most grace for polls still
// running, and returns every scheduled poll's sample: none is dropped.
func (l load) run(ctx context.Context, start time.Time) []sample {
	measured := start.Add(l.warmup)
	end := measured.Add(l.duration)
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
	target, err := parsePollTarget(l.url)
	if err != nil {
		// Every scheduled poll fails the same way: none is dropped.
		return l.unreachable(start, measured, end, err)
	}
	full := target.request(l.key, "", "")
	pools := make([]*pollConns, l.pollers)
	// Each poller's connections hang off a context of its own (its end
	// closes them): with every poll a child of cutoff, each poll's context
	// registration contended for cutoff's one lock and its map of
	// children, and the load generator, which runs in the registry's
	// process, spent a quarter of the CPU there (profile of 10,000
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
		pools[p] = newPollConns(pollerCtx, target, l.connsPerPoller)
		conns := pools[p]
		phase := l.interval * time.Duration(p) / time.Duration(l.pollers)
		// The pollers join one after another over the warm-up (a ramp),
		// as consumers arrive, not all in its first interval.
		joins := start.Add(l.warmup * time.Duration(p) / time.Duration(l.pollers))
		held := &pollerState{l: l, target: target, full: full}
		held.set(l.etag)
		poller.Go(func() {
			for k := 0; ; k++ {
				at := start.Add(phase + time.Duration(k)*l.interval)
				if at.Before(joins) {
					continue
				}
				if !at.Before(end) || !l.waitUntil(pollerCtx, at) {
					return
				}
				warm := at.Before(measured)
				polls.Go(func() {
					s := l.poll(pollerCtx, conns, held, at)
					s.warm = warm
					record(s)
				})
			}
		})
	}
	poller.Wait()
	polls.Wait() // every poll ends by the cut-off at the latest
	for _, c := range pools {
		c.closeIdle()
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

// unreachable is every poll of a run whose URL the pollers cannot use,
// failed with err.
func (l load) unreachable(start, measured, end time.Time, err error) []sample {
	var samples []sample
	for p := range l.pollers {
		phase := l.interval * time.Duration(p) / time.Duration(l.pollers)
		joins := start.Add(l.warmup * time.Duration(p) / time.Duration(l.pollers))
		for at := start.Add(phase); at.Before(end); at = at.Add(l.interval) {
			if !at.Before(joins) {
				samples = append(samples, sample{at: at, written: -1, err: err, warm: at.Before(measured)})
			}
		}
	}
	return samples
}

// poll makes one index request scheduled at at, bounded by ctx (the run's
// cut-off), as a consumer that keeps the ETag it was last given: with
// deltas, it asks for what changed since, and fetches the whole document
// after a 410.
func (l load) poll(ctx context.Context, conns *pollConns, held *pollerState, at time.Time) sample {
	tag, req := held.get()
	s := sample{at: at, written: -1}
	written := func() {
		if s.written < 0 {
			s.written = l.clk.Since(at)
		}
	}
	a, err := conns.roundTrip(req, tag, written)
	s.bytes += a.bytes
	if err == nil && a.status == http.StatusGone {
		s.gone = true
		a, err = conns.roundTrip(held.full, tag, written)
		s.bytes += a.bytes
	}
	if err == nil && a.status == http.StatusOK && a.etag != "" && a.etag != tag {
		held.set(a.etag)
	}
	s.latency, s.err, s.status = l.clk.Since(at), err, a.status
	if err != nil {
		s.status = 0
		if ctx.Err() != nil {
			s.unfinished = true
			s.err = fmt.Errorf("still running at the end of the run plus %s: %w", l.grace, err)
		}
	}
	return s
}

// pollerState is one poller's last ETag and the request that polls with
// it, built when the ETag changes (once per publication), not per poll.
type pollerState struct {
	l      load
	target pollTarget
	full   []byte // the whole document's request (after a 410)

	mu  sync.Mutex
	tag string
	req []byte
}

func (h *pollerState) get() (string, []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tag, h.req
}

func (h *pollerState) set(tag string) {
	var req []byte
	switch {
	case tag == "":
		req = h.full
	case h.l.deltas:
		req = h.target.request(h.l.key, registryclient.SinceParam+"="+strings.Trim(tag, `"`), "")
	default:
		req = h.target.request(h.l.key, "", tag)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tag, h.req = tag, req
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
	// The polls whose request was written: from then to their end
	// (answer*: the registry's answer and its reading), and from their
	// scheduled instant to then (before: in the pollers' process).
	answerP50, answerP99, answerP999, beforeP99 time.Duration
	// warm is the warm-up's polls (requests, errors and latencies only),
	// which no other field counts.
	warm *stats
}

// bytesPerChange is the mean body of a poll that found a change.
func (st stats) bytesPerChange() int64 {
	if st.changed == 0 {
		return 0
	}
	return st.changedBytes / int64(st.changed)
}

// summarize summarises the measured samples; the warm-up's, if any, go
// into st.warm.
func summarize(samples []sample) stats {
	var measured, warm []sample
	for _, s := range samples {
		if s.warm {
			warm = append(warm, s)
		} else {
			measured = append(measured, s)
		}
	}
	st := summarizeAll(measured)
	if len(warm) > 0 {
		w := summarizeAll(warm)
		st.warm = &stats{requests: w.requests, errors: w.errors, unfinished: w.unfinished, p50: w.p50, p90: w.p90, p99: w.p99, p999: w.p999, max: w.max}
	}
	return st
}

func summarizeAll(samples []sample) stats {
	st := stats{requests: len(samples)}
	lat := make([]time.Duration, 0, len(samples))
	var answer, before []time.Duration
	for _, s := range samples {
		lat = append(lat, s.latency)
		if s.written >= 0 {
			answer, before = append(answer, s.latency-s.written), append(before, s.written)
		}
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
	slices.Sort(answer)
	slices.Sort(before)
	st.answerP50, st.answerP99, st.answerP999 = quantile.Sorted(answer, 0.500), quantile.Sorted(answer, 0.990), quantile.Sorted(answer, 0.999)
	st.beforeP99 = quantile.Sorted(before, 0.990)
	slices.Sort(lat)
	st.p50, st.p90, st.p99, st.p999 = quantile.Sorted(lat, 0.500), quantile.Sorted(lat, 0.900), quantile.Sorted(lat, 0.990), quantile.Sorted(lat, 0.999)
	if len(lat) > 0 {
		st.max = lat[len(lat)-1]
	}
	return st
}
