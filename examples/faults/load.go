package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/rx"
)

// Load shape. Pollers poll on a fixed interval, open loop (a late poll is
// not skipped): as real consumers do.
const (
	pollInterval     = 250 * time.Millisecond
	downloadInterval = 500 * time.Millisecond
	readyzInterval   = 500 * time.Millisecond
	resubscribeWait  = 500 * time.Millisecond
	requestBudget    = 70 * time.Second // past every server budget: the server answers first
	liveQuery        = "namespace:Plugins nodeType:Package"
	bellViewer       = "Bellboy"
)

// publication is one publish that answered 201.
type publication struct {
	plugin, version, sha256, phase, via string
}

// created is one notification Create reported delivered.
type created struct {
	id, phase, via string
}

// load is the traffic of the run and what it observed.
type load struct {
	tally    *tally
	client   *http.Client
	key      string // the consumer's instance key
	token    string // the publish token
	replicas []*replica
	pgURL    string

	publishEvery, notifyEvery time.Duration
	freshness                 time.Duration
	watchers                  sync.WaitGroup // watches of unannounced records
	unannounced               []unannounced

	mu            sync.Mutex
	published     []publication
	notified      []created
	lastIndex     map[string][]client.IndexEntry // by replica
	dbDown        []window
	readyz        []readyzAnswer
	readyzMissing int64

	bell  *bellWatch
	lives []*liveWatch
}

type window struct{ from, to time.Time }

type readyzAnswer struct {
	start, end time.Time
	status     int
	replica    string
	phase      string
}

// get sends a request with the consumer's key.
func (l *load) get(ctx context.Context, u, etag string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+l.key)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	return do(l.client, req)
}

func do(c *http.Client, req *http.Request) (*http.Response, []byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// every runs f every interval until ctx ends, each run on its own
// goroutine (open loop), and waits for the runs in flight.
func every(ctx context.Context, wg *sync.WaitGroup, interval time.Duration, f func(ctx context.Context, n int)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				rctx, cancel := context.WithTimeout(ctx, requestBudget)
				defer cancel()
				f(rctx, n)
			}()
		}
	}()
}

// poller polls one replica's index with If-None-Match.
func (l *load) poller(ctx context.Context, wg *sync.WaitGroup, r *replica) {
	var mu sync.Mutex
	etag := ""
	var down unavailability
	every(ctx, wg, pollInterval, func(ctx context.Context, _ int) {
		mu.Lock()
		tag := etag
		mu.Unlock()
		start := time.Now()
		resp, body, err := l.get(ctx, r.baseURL()+client.IndexPath, tag)
		if ctx.Err() != nil && err != nil {
			return // the run ended
		}
		ok := l.tally.classify("index on "+r.name, resp, body, err)
		down.observe(l.tally, ok, start, time.Now())
		if ok && resp.StatusCode == http.StatusOK {
			var idx client.Index
			if json.Unmarshal(body, &idx) == nil {
				l.mu.Lock()
				l.lastIndex[r.name] = idx.Bundles
				l.mu.Unlock()
			}
			mu.Lock()
			etag = resp.Header.Get("ETag")
			mu.Unlock()
		}
	})
}

// downloader downloads a bundle the replica's last index listed and checks
// its sha256.
func (l *load) downloader(ctx context.Context, wg *sync.WaitGroup, r *replica) {
	every(ctx, wg, downloadInterval, func(ctx context.Context, _ int) {
		l.mu.Lock()
		entries := l.lastIndex[r.name]
		l.mu.Unlock()
		if len(entries) == 0 {
			return
		}
		e := entries[rand.IntN(len(entries))]
		resp, body, err := l.get(ctx, resolve(r.baseURL(), e.URL), "")
		if ctx.Err() != nil && err != nil {
			return
		}
		if l.tally.classify("download on "+r.name, resp, body, err) && !sameSHA(body, e.SHA256) {
			l.tally.add(func(c *counts) { c.badDownloads++ })
			l.tally.violation("bad_download", "%s %s@%s does not hash to %s", r.name, e.Plugin, e.Version, e.SHA256)
		}
	})
}

// resolve makes an index link absolute against the replica it came from
// (links may be relative).
func resolve(base, link string) string {
	b, err := url.Parse(base + "/")
	if err != nil {
		return link
	}
	u, err := b.Parse(link)
	if err != nil {
		return link
	}
	return u.String()
}

func sameSHA(body []byte, want string) bool {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:]) == want
}

// publisher lands a new package every publishEvery, alternately on each
// replica.
func (l *load) publisher(ctx context.Context, wg *sync.WaitGroup) {
	every(ctx, wg, l.publishEvery, func(ctx context.Context, n int) {
		r := l.replicas[n%len(l.replicas)]
		if r.held.Load() {
			r = l.replicas[(n+1)%len(l.replicas)]
		}
		plugin, version := fmt.Sprintf("Faults.P%04d", n), "1.0.0"
		archive := bundle(plugin, n)
		u := r.baseURL() + client.BundlesPath + "/" + url.PathEscape(plugin) + "?version=" + version + "&tier=free"
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(archive))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer "+l.token)
		req.Header.Set("Content-Type", "application/zip")
		ph := l.tally.current()
		resp, body, err := do(l.client, req)
		if ctx.Err() != nil && err != nil {
			return
		}
		if l.tally.classify("publish on "+r.name, resp, body, err) && resp.StatusCode == http.StatusCreated {
			sum := sha256.Sum256(archive)
			l.mu.Lock()
			l.published = append(l.published, publication{plugin, version, hex.EncodeToString(sum[:]), ph, r.name})
			l.mu.Unlock()
			if r.silent.Load() {
				l.watchUnannounced(ctx, &l.watchers, unannounced{plugin: plugin, version: version, sha256: hex.EncodeToString(sum[:]),
					via: r.name, phase: ph, at: time.Now()})
			}
		}
	})
}

// bundle is a small zip, different for every n.
func bundle(plugin string, n int) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("manifest.json")
	fmt.Fprintf(w, `{"plugin":%q,"n":%d}`, plugin, n)
	_ = zw.Close()
	return buf.Bytes()
}

// notifier creates a notification addressed to bellViewer every
// notifyEvery, alternately through each replica.
func (l *load) notifier(ctx context.Context, wg *sync.WaitGroup) {
	every(ctx, wg, l.notifyEvery, func(ctx context.Context, n int) {
		r := l.replicas[n%len(l.replicas)]
		_, svc := r.current()
		if svc == nil {
			return // the replica is down
		}
		ph := l.tally.current()
		nodes, err := svc.Create(ctx, notifications.Notification{
			Title: fmt.Sprintf("drill notification %d", n), TargetPath: "Faults/Drill", CreatedBy: "examples/faults",
		}, bellViewer+"/Inbox")
		if err != nil || len(nodes) != 1 {
			return // not reported created: nothing is owed
		}
		_, id := mesh.SplitPath(nodes[0].Path)
		l.mu.Lock()
		l.notified = append(l.notified, created{id, ph, r.name})
		l.mu.Unlock()
	})
}

// readyzProbe asks a replica's /readyz and keeps the answers, to be held
// against the database probe's.
func (l *load) readyzProbe(ctx context.Context, wg *sync.WaitGroup, r *replica) {
	every(ctx, wg, readyzInterval, func(ctx context.Context, _ int) {
		start := time.Now()
		resp, _, err := l.get(ctx, r.baseURL()+registry.ReadyPath, "")
		if err != nil {
			return
		}
		if resp.StatusCode == http.StatusNotFound {
			atomic.AddInt64(&l.readyzMissing, 1)
		}
		l.mu.Lock()
		l.readyz = append(l.readyz, readyzAnswer{start, time.Now(), resp.StatusCode, r.name, l.tally.current()})
		l.mu.Unlock()
	})
}

// readyzOKWhileDown returns how long /readyz answered 200 while the
// database was unreachable: each 200 whose request, from asking to answer,
// lies inside a window the schedule held the database down (stopped, or
// paused) counts one probe interval. The first registry.ReadinessReuse of a
// window is left out: /readyz may answer an outcome evaluated just before
// the database went away for that long, by design; a 200 asked later was
// evaluated during the outage.
func (l *load) readyzOKWhileDown() (time.Duration, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d time.Duration
	for _, a := range l.readyz {
		if a.status != http.StatusOK {
			continue
		}
		for _, w := range l.dbDown {
			if !a.start.Before(w.from.Add(registry.ReadinessReuse)) && !a.end.After(w.to) {
				d += readyzInterval
				l.tally.violation("readyz_ok_while_db_down", "replica %s answered /readyz 200 at %s (asked %s before) during %q while the database was down",
					a.replica, a.end.Format("15:04:05.000"), a.end.Sub(a.start).Round(time.Millisecond), a.phase)
				break
			}
		}
	}
	return d, atomic.LoadInt64(&l.readyzMissing)
}

// databaseDown records a window in which the schedule held the database
// unreachable.
func (l *load) databaseDown(from, to time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dbDown = append(l.dbDown, window{from, to})
}

// bellWatch keeps bellViewer's bell on one replica, resubscribing when it
// ends (a failed read ends it; the next subscription starts from a fresh
// read).
type bellWatch struct {
	mu       sync.Mutex
	latest   notifications.BellState
	frames   int64
	failures int64
}

func (b *bellWatch) run(ctx context.Context, wg *sync.WaitGroup, r *replica) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_, svc := r.current()
			if svc != nil {
				ended := make(chan struct{})
				var once sync.Once
				sub := svc.Bell(bellViewer).Subscribe(rx.NewObserver(
					func(s notifications.BellState) {
						b.mu.Lock()
						b.latest, b.frames = s, b.frames+1
						b.mu.Unlock()
					},
					func(error) {
						b.mu.Lock()
						b.failures++
						b.mu.Unlock()
						once.Do(func() { close(ended) })
					},
					func() { once.Do(func() { close(ended) }) },
				))
				select {
				case <-ctx.Done():
				case <-ended:
				}
				sub.Unsubscribe()
			}
			select {
			case <-ctx.Done():
			case <-time.After(resubscribeWait):
			}
		}
	}()
}

// ids counts each notification id in the latest bell state.
func (b *bellWatch) ids() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]int{}
	for _, g := range b.latest.Groups {
		for _, n := range g.Items {
			out[n.ID]++
		}
	}
	return out
}

// liveWatch keeps a live query on one replica and applies its frames; it
// resubscribes when the query ends.
type liveWatch struct {
	r *replica

	mu                             sync.Mutex
	state                          map[string]int64 // path → version
	frames, resets, ends, initials int64
}

func (w *liveWatch) run(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			store, _ := w.r.current()
			if store != nil {
				ended := make(chan struct{})
				var once sync.Once
				end := func() {
					w.mu.Lock()
					w.ends++
					w.mu.Unlock()
					once.Do(func() { close(ended) })
				}
				sub := store.Query(liveQuery).Subscribe(rx.NewObserver(w.apply, func(error) { end() }, end))
				select {
				case <-ctx.Done():
				case <-ended:
				}
				sub.Unsubscribe()
			}
			select {
			case <-ctx.Done():
			case <-time.After(resubscribeWait):
			}
		}
	}()
}

func (w *liveWatch) apply(c mesh.Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.frames++
	switch c.Kind {
	case mesh.Initial, mesh.Reset:
		if c.Kind == mesh.Reset {
			w.resets++
		} else {
			w.initials++
		}
		w.state = map[string]int64{}
		for _, n := range c.Items {
			w.state[n.Path] = n.Version
		}
	case mesh.Added, mesh.Updated:
		for _, n := range c.Items {
			w.state[n.Path] = n.Version
		}
	case mesh.Removed:
		for _, n := range c.Items {
			delete(w.state, n.Path)
		}
	}
}

// gap compares the live state with a fresh read and describes the
// difference ("" when there is none).
func (w *liveWatch) gap(ctx context.Context) string {
	store, _ := w.r.current()
	if store == nil {
		return "replica down"
	}
	fresh, err := rx.First(ctx, store.Query(liveQuery))
	if err != nil {
		return "fresh read failed: " + err.Error()
	}
	want := map[string]int64{}
	for _, n := range fresh.Items {
		want[n.Path] = n.Version
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var missing, extra, stale int
	for p, v := range want {
		got, ok := w.state[p]
		switch {
		case !ok:
			missing++
		case got != v:
			stale++
		}
	}
	for p := range w.state {
		if _, ok := want[p]; !ok {
			extra++
		}
	}
	if missing+extra+stale == 0 {
		return ""
	}
	return fmt.Sprintf("live state has %d nodes, a fresh read %d: %d missing, %d extra, %d stale", len(w.state), len(want), missing, extra, stale)
}
