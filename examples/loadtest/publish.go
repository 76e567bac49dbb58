package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/internal/quantile"
	"github.com/meshrx/meshrx/registry/client"
)

// publisher lands a new version of an existing module (and, every fifth
// time, a new module) every interval through the registry's own publish
// route, while the pollers run: what makes their documents change.
type publisher struct {
	base     string // the registry's URL, without a path
	token    string // the publish token
	modules  int    // modules landed before the run: Load.Module0000…
	interval time.Duration
	clk      clock.Clock
	run      int64 // distinguishes this run's versions from a previous run's over the same -dir
}

// publishOutcome counts what a publisher did.
type publishOutcome struct {
	published, failed int
	lastError         string
	slowest           time.Duration
	took              []time.Duration // each answered publication's latency
	began             []time.Time     // when each publication (answered or not) was sent
	lasted            []time.Duration // and how long it took
}

// median is the middle publication's latency (nearest rank).
func (o publishOutcome) median() time.Duration {
	if len(o.took) == 0 {
		return 0
	}
	sorted := slices.Clone(o.took)
	slices.Sort(sorted)
	return quantile.Sorted(sorted, 0.500)
}

// publishAll publishes every interval from start until end, one at a time (a
// publication still running when the next is due delays it), and returns
// the outcome once the last publication has answered or ctx ended.
func (p publisher) publishAll(ctx context.Context, start, end time.Time) publishOutcome {
	var out publishOutcome
	hc := &http.Client{Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	for k := 0; ; k++ {
		at := start.Add(time.Duration(k+1) * p.interval)
		if !at.Before(end) {
			return out
		}
		if d := p.clk.Until(at); d > 0 {
			t := p.clk.Timer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return out
			}
		}
		began := p.clk.Now()
		err := p.publish(ctx, hc, k)
		took := p.clk.Since(began)
		out.slowest = max(out.slowest, took)
		out.began, out.lasted = append(out.began, began), append(out.lasted, took)
		if err != nil {
			out.failed++
			out.lastError = err.Error()
			continue
		}
		out.published++
		out.took = append(out.took, took)
	}
}

// publish lands the k-th publication: version 2.k.R of module k (R the
// run), or, every fifth time, module Load.NewNNNN (new, unless a previous
// run over the same -dir made it).
func (p publisher) publish(ctx context.Context, hc *http.Client, k int) error {
	name, version := moduleName(k%p.modules), fmt.Sprintf("2.%d.%d", k, p.run)
	if k%5 == 4 {
		name = fmt.Sprintf("Load.New%04d", k)
	}
	archive, err := tinyBundle(name)
	if err != nil {
		return err
	}
	u := p.base + client.BundlesPath + "/" + url.PathEscape(name) + "?version=" + url.QueryEscape(version)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(archive))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/zip")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("publishing %s@%s: %d %s", name, version, resp.StatusCode, bytes.TrimSpace(body))
	}
	return nil
}

// publishing runs p beside the pollers when interval is positive.
func publishing(ctx context.Context, p publisher, start, end time.Time) (wait func() publishOutcome) {
	if p.interval <= 0 {
		return func() publishOutcome { return publishOutcome{} }
	}
	var (
		wg  sync.WaitGroup
		out publishOutcome
	)
	wg.Go(func() { out = p.publishAll(ctx, start, end) })
	return func() publishOutcome {
		wg.Wait()
		return out
	}
}
