// Command faults runs two registry replicas on one PostgreSQL database and
// one module volume under open-loop load, injects faults on a schedule and
// counts what a user would have seen.
//
//	go run ./examples/faults [-schedule full|short] [-quiet 30s] [-pg URL [-pg-ctl DATADIR]] [-volume dir|s3]
//
// Without -pg it starts a throwaway PostgreSQL the way the tests do
// (mesh/pgstore/pgtest) and can stop, restart and pause it. With -pg it uses
// that database; -pg-ctl names the server's data directory so that pg_ctl
// can stop and start it (faults that need it are skipped otherwise).
//
// The replicas are processes (this program run again, as examples/registry
// serves: the change feed on, the volume's journal tailed); "killed" is
// SIGKILL, and the replica is started again on the same address. The load, for the whole run: pollers on both
// replicas with If-None-Match, a publisher landing a new package every few
// seconds alternately on each replica, downloads checked against the
// index's sha256, a bell subscriber receiving notifications addressed to it
// (created alternately through each replica), and a live query on each
// replica counting frames. The schedule (full):
//
//  1. every backend of the database terminated, the listeners' included;
//  2. PostgreSQL fast restart;
//  3. PostgreSQL stopped for 20 s, then started;
//  4. PostgreSQL paused (SIGSTOP to every server process) 10 s, then SIGCONT;
//  5. replica b killed and restarted;
//  6. the module volume slow (100 ms per file operation) for 20 s;
//  7. announcements on the change feed fail on replica a for 20 s;
//  8. replica b dies between a publication's commit and its announcement
//     (and the same bytes are published through it again after its restart);
//  9. replica b restarted with its clock an hour behind (for the rest of
//     the run), publishing a module's newer version after a published the
//     older;
//  10. with -volume s3 (the module volume a bucket on an S3-protocol server
//     this program starts, internal/s3test: the replicas then share nothing
//     but the database and the bucket): the object store stopped for 20 s,
//     then started with its objects;
//
// each followed by a quiet period. Then it verifies: every publication
// that answered 201 is listed by both replicas within the freshness bound
// and downloads with its sha256; every notification created is in the bell
// exactly once; each live query's state equals a fresh read; every record
// committed without its announcement (faults 7 and 8) was listed by the
// other replica within the freshness bound. The last line
// is the summary; the exit status is 1 when an invariant was broken.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/client"
)

func main() {
	if config := os.Getenv(childEnv); config != "" {
		if err := runChild(config, os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "faults replica:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(2)
	}
	if !sum.clean() {
		os.Exit(1)
	}
}

type config struct {
	pg, pgCtl, schedule string
	quiet, freshness    time.Duration
	warmup              time.Duration
	pollers             int
	publishEvery        time.Duration
	notifyEvery         time.Duration
	verbose             bool
	only                string
	journal             bool
	volume              string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("faults", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.pg, "pg", "", "PostgreSQL URL (default: a throwaway server started here)")
	fs.StringVar(&c.pgCtl, "pg-ctl", "", "data directory of the -pg server, for pg_ctl stop/start/restart and pausing it")
	fs.StringVar(&c.schedule, "schedule", "full", "fault schedule: full, or short (≤ 60 s, for go test)")
	fs.DurationVar(&c.quiet, "quiet", 0, "quiet period after each fault (default 30s full, 5s short)")
	fs.DurationVar(&c.freshness, "freshness", 0, "the replicas' snapshot freshness bound (default registry's 30s full, 3s short)")
	fs.DurationVar(&c.warmup, "warmup", 0, "load before the first fault (default 10s full, 3s short)")
	fs.IntVar(&c.pollers, "pollers", 3, "index pollers per replica, each every 250ms")
	fs.DurationVar(&c.publishEvery, "publish-every", 3*time.Second, "interval between publications")
	fs.DurationVar(&c.notifyEvery, "notify-every", 2*time.Second, "interval between notifications")
	fs.BoolVar(&c.verbose, "v", false, "log the replicas' warnings to stderr")
	fs.StringVar(&c.only, "only", "", "run only these faults of the schedule, by number (e.g. 3,4)")
	fs.StringVar(&c.volume, "volume", "dir", "the module volume: dir (a directory both replicas share) or s3 (a bucket on an S3-protocol server started here: the replicas share nothing but the database and the bucket; adds the object store's outage to the schedule)")
	fs.BoolVar(&c.journal, "journal", true, "the replicas tail the volume's journal (false: they hold the freshness bound by re-deriving every -freshness instead, O(modules))")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.volume != "dir" && c.volume != "s3" {
		return config{}, fmt.Errorf("-volume %q: want dir or s3", c.volume)
	}
	if c.pgCtl != "" && c.pg == "" {
		return config{}, errors.New("-pg-ctl needs -pg")
	}
	switch {
	case c.pollers < 1:
		return config{}, fmt.Errorf("-pollers must be at least 1, not %d", c.pollers)
	case c.publishEvery <= 0:
		return config{}, fmt.Errorf("-publish-every must be positive, not %s", c.publishEvery)
	case c.notifyEvery <= 0:
		return config{}, fmt.Errorf("-notify-every must be positive, not %s", c.notifyEvery)
	case c.quiet < 0:
		return config{}, fmt.Errorf("-quiet must not be negative (0: the schedule's default), not %s", c.quiet)
	case c.freshness < 0:
		return config{}, fmt.Errorf("-freshness must not be negative (0: the default), not %s", c.freshness)
	case c.warmup < 0:
		return config{}, fmt.Errorf("-warmup must not be negative (0: the default), not %s", c.warmup)
	}
	short := c.schedule == "short"
	if c.freshness <= 0 {
		c.freshness = map[bool]time.Duration{true: 3 * time.Second, false: registry.DefaultFreshness}[short]
	}
	if c.warmup <= 0 {
		c.warmup = map[bool]time.Duration{true: 3 * time.Second, false: 10 * time.Second}[short]
	}
	return c, nil
}

// summary is what the last line reports.
type summary struct {
	requests, wrong401, retryAfterMissing, other5xx int64
	lostPublications, lostNotifications, silentGaps int64
	readyzOKWhileDown, recoveryP99, maxUnavailable  time.Duration
	goroutinesGrowth                                int
	rssGrowthMB                                     float64
	readyzMissing                                   int64
	neverRecovered                                  int
	unannouncedServed, unannouncedTotal             int
}

func (s summary) clean() bool {
	return s.wrong401 == 0 && s.retryAfterMissing == 0 && s.other5xx == 0 && s.lostPublications == 0 &&
		s.lostNotifications == 0 && s.silentGaps == 0 && s.readyzOKWhileDown == 0 && s.neverRecovered == 0 &&
		s.unannouncedServed == s.unannouncedTotal
}

func (s summary) String() string {
	return fmt.Sprintf("summary: requests=%d wrong_401=%d retry_after_missing=%d other_5xx=%d lost_publications=%d lost_notifications=%d silent_gaps=%d unannounced_records_served_within_freshness=%d/%d readyz_ok_while_db_down_s=%.1f recovery_p99_s=%.1f max_unavailable_s=%.1f goroutines_growth=%d rss_growth_mb=%.1f",
		s.requests, s.wrong401, s.retryAfterMissing, s.other5xx, s.lostPublications, s.lostNotifications, s.silentGaps,
		s.unannouncedServed, s.unannouncedTotal,
		s.readyzOKWhileDown.Seconds(), s.recoveryP99.Seconds(), s.maxUnavailable.Seconds(), s.goroutinesGrowth, s.rssGrowthMB)
}

// setupBudget bounds starting the database and the replicas.
const setupBudget = 3 * time.Minute

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (sum summary, err error) {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return sum, err
	}
	faults, err := schedule(cfg.schedule, cfg.quiet, cfg.volume == "s3")
	if err != nil {
		return sum, err
	}
	if faults, err = pick(faults, cfg.only); err != nil {
		return sum, err
	}
	level := slog.LevelError
	if cfg.verbose {
		level = slog.LevelWarn
	}
	stderr = &lockedWriter{w: stderr} // the replica processes write to it too
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	out := func(format string, a ...any) { fmt.Fprintf(stdout, format, a...) }

	setupCtx, cancelSetup := context.WithTimeout(ctx, setupBudget)
	defer cancelSetup()
	e := &env{pgURL: cfg.pg, out: out}
	if cfg.pg == "" {
		srv, err := pgtest.Config{Logger: logger}.Start(setupCtx)
		if err != nil {
			return sum, err
		}
		defer func() { err = errors.Join(err, srv.Stop()) }()
		if e.pgURL, err = srv.CreateDatabase(setupCtx, "faults"); err != nil {
			return sum, err
		}
		e.db = srv
		out("database: throwaway PostgreSQL at %s\n", srv.Dir())
	} else if cfg.pgCtl != "" {
		if e.db, err = newPgCtl(cfg.pgCtl); err != nil {
			return sum, err
		}
	}

	dir, err := os.MkdirTemp("", "meshrx-faults-")
	if err != nil {
		return sum, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	data := filepath.Join(dir, "volume")
	if err := os.Mkdir(data, 0o755); err != nil {
		return sum, err
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	rcfg := replicaConfig{pgURL: e.pgURL, data: data, freshness: cfg.freshness, token: hex.EncodeToString(tok[:]), logger: logger,
		stderr: stderr, verbose: cfg.verbose, noJournal: !cfg.journal}
	volumeName := data
	if cfg.volume == "s3" {
		srv, err := s3test.New("meshrx-faults")
		if err != nil {
			return sum, err
		}
		defer srv.Close()
		e.s3 = srv
		rcfg.volume, rcfg.env = srv.VolumeURL("faults"), s3test.Env()
		volumeName = rcfg.volume
	}
	e.replicas = []*replica{
		{name: "a", cfg: rcfg, control: filepath.Join(dir, "control-a")},
		{name: "b", cfg: rcfg, control: filepath.Join(dir, "control-b")},
	}
	for _, r := range e.replicas {
		defer func() { err = errors.Join(err, r.close()) }()
		if err := r.start(setupCtx); err != nil {
			return sum, err
		}
	}
	key, err := consumerKey(setupCtx, e.replicas[0])
	if err != nil {
		return sum, fmt.Errorf("registering the consumer: %w", err)
	}
	out("replicas: a %s, b %s (processes; one database, one volume %s, freshness %s)\n",
		e.replicas[0].baseURL(), e.replicas[1].baseURL(), volumeName, cfg.freshness)

	transport := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	defer transport.CloseIdleConnections()
	t := newTally(stdout)
	l := &load{
		tally: t, client: &http.Client{Transport: transport}, key: key, token: rcfg.token, replicas: e.replicas, pgURL: e.pgURL,
		publishEvery: cfg.publishEvery, notifyEvery: cfg.notifyEvery, freshness: cfg.freshness, lastIndex: map[string][]client.IndexEntry{},
		bell: &bellWatch{},
	}
	e.down = l.databaseDown
	e.load, e.watchers = l, &l.watchers
	runtime.GC()
	goroutinesBefore := runtime.NumGoroutine()

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	writeCtx, stopWrites := context.WithCancel(loadCtx)
	defer stopWrites()
	var loadWG, writeWG sync.WaitGroup
	for _, r := range e.replicas {
		for range cfg.pollers {
			l.poller(loadCtx, &loadWG, r)
		}
		l.downloader(loadCtx, &loadWG, r)
		l.readyzProbe(loadCtx, &loadWG, r)
		w := &liveWatch{r: r}
		l.lives = append(l.lives, w)
		w.run(loadCtx, &loadWG)
	}
	l.bell.run(loadCtx, &loadWG, e.replicas[0])
	l.publisher(writeCtx, &writeWG)
	l.notifier(writeCtx, &writeWG)

	out("warm-up %s\n", cfg.warmup)
	wait(ctx, cfg.warmup)
	rssBefore := rssMB()

	var phases []*phase
	for _, f := range faults {
		if ctx.Err() != nil {
			break
		}
		ph := t.begin(f.name)
		phases = append(phases, ph)
		if f.needsDB && e.db == nil {
			ph.note = "skipped: needs control of the server (-pg-ctl)"
			ph.recovery, ph.feedBack = 0, 0
			out("fault %s — %s\n", f.name, ph.note)
			continue
		}
		out("fault %s\n", f.name)
		if err := f.inject(ctx, e); err != nil {
			return sum, fmt.Errorf("fault %s: %w", f.name, err)
		}
		end := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { ph.recovery = awaitRecovery(ctx, l, end) })
		wg.Go(func() { ph.feedBack = awaitFeeds(ctx, l, end) })
		wg.Wait()
		out("  recovered in %s (change feeds back in %s); quiet %s\n", seconds(ph.recovery), seconds(ph.feedBack), f.quiet)
		wait(ctx, max(0, f.quiet-time.Since(end)))
	}
	if err := ctx.Err(); err != nil {
		// Verifying needs reads the ended context refuses: what it counted
		// would be losses nobody saw.
		return sum, fmt.Errorf("interrupted before the verification: %w", err)
	}
	rssAfter := rssMB()

	// Verification: no more writes; what was acknowledged must be there.
	stopWrites()
	writeWG.Wait()
	l.watchers.Wait() // bounded: each watch ends at its record's freshness bound and a margin
	t.begin("verification")
	out("verifying\n")
	lostPubs := l.verifyPublications(ctx, cfg.freshness+30*time.Second)
	lostNotes := l.verifyNotifications(ctx, 30*time.Second)
	gaps := l.verifyLiveQueries(ctx, 15*time.Second)

	stopLoad()
	loadWG.Wait()
	transport.CloseIdleConnections()
	wait(ctx, 2*time.Second) // server goroutines of closed connections end
	runtime.GC()
	goroutinesAfter := runtime.NumGoroutine()

	t.mu.Lock()
	total := t.total
	t.mu.Unlock()
	readyzDown, readyzMissing := l.readyzOKWhileDown()
	sum = summary{
		requests: total.requests, wrong401: total.wrong401, retryAfterMissing: total.retryAfterMissing, other5xx: total.other5xx,
		lostPublications: lostPubs + total.badDownloads, lostNotifications: lostNotes, silentGaps: gaps,
		readyzOKWhileDown: readyzDown, maxUnavailable: total.maxUnavailable, readyzMissing: readyzMissing,
		goroutinesGrowth: goroutinesAfter - goroutinesBefore, rssGrowthMB: rssAfter - rssBefore,
	}
	l.mu.Lock()
	for _, u := range l.unannounced {
		sum.unannouncedTotal++
		if u.servedWithin {
			sum.unannouncedServed++
		}
	}
	l.mu.Unlock()
	var recoveries []time.Duration
	for _, ph := range phases {
		if ph.note != "" {
			continue
		}
		if ph.recovery < 0 {
			sum.neverRecovered++
			recoveries = append(recoveries, recoveryBudget)
			continue
		}
		recoveries = append(recoveries, ph.recovery)
	}
	sum.recoveryP99 = p99(recoveries)
	report(stdout, t, l, sum, goroutinesBefore, goroutinesAfter, rssBefore, rssAfter)
	return sum, nil
}

// pick keeps the faults whose numbers only lists ("" keeps all). Each
// keeps its number in its name.
func pick(faults []fault, only string) ([]fault, error) {
	for i := range faults {
		faults[i].name = fmt.Sprintf("%d %s", i+1, faults[i].name)
	}
	if only == "" {
		return faults, nil
	}
	var out []fault
	for _, f := range strings.Split(only, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > len(faults) {
			return nil, fmt.Errorf("-only %q: want fault numbers 1..%d", only, len(faults))
		}
		out = append(out, faults[n-1])
	}
	return out, nil
}

// consumerKey registers the consumer instance (plan pro, granted Plugins/*)
// and issues its key.
func consumerKey(ctx context.Context, r *replica) (string, error) {
	store, _ := r.current()
	reg := &auth.Instances{Mesh: store}
	for _, t := range []auth.PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 1}} {
		if err := reg.SetPlanTier(ctx, t); err != nil {
			return "", err
		}
	}
	var exists *auth.InstanceExistsError
	if _, err := reg.Register(ctx, "faults", "fault drill consumer", "pro"); err != nil && !errors.As(err, &exists) {
		return "", err
	}
	if _, err := reg.SetGrant(ctx, "faults", "examples/faults", registry.DefaultSource+"/*"); err != nil {
		return "", err
	}
	return reg.IssueKey(ctx, "faults")
}

// p99 is the nearest-rank 99th percentile.
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (99*len(s) + 99) / 100
	return s[min(len(s), max(1, i))-1]
}

func seconds(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// rssMB returns the resident set size after returning freed memory.
func rssMB() float64 {
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// lockedWriter serialises writes from the run's logger and the replica
// processes' output.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
