package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/rx"
)

// roleEnv names the environment variable that makes this program (or its
// test binary, see TestMain) run as a replica or the writer: its value is
// the roleConfig as JSON.
const roleEnv = "MESHRX_PGLIVE_ROLE"

// Budgets of the roles' waits.
const (
	openBudget     = time.Minute      // opening the store
	initialsBudget = 5 * time.Minute  // every live query's Initial
	orderBudget    = 15 * time.Minute // the coordinator's next instruction
	drainBudget    = 30 * time.Second // the last frames after the writes
)

// roleConfig is what a replica or the writer is told.
type roleConfig struct {
	Role       string // "replica" or "writer"
	Name       string
	PGURL      string
	Live       int // viewers with a live query (replica); viewers written to (writer)
	Writes     int
	Interval   time.Duration
	Partitions int
	Writers    int
	Seed       uint64
	CPUProfile string // replica: write a CPU profile of the writes to this path plus its name
}

// expectation is the coordinator's line to a replica once the writer is
// done: which writes to expect a frame for.
type expectation struct {
	Writes int
	Failed []int // sequence numbers whose Put failed: no frame is owed
}

// replicaResult is a replica's last line.
type replicaResult struct {
	Name       string
	LatencyUS  []int64 // per frame item: from the writer's Put start to the frame
	FrameNS    []int64 // per sequence number: when its frame came (Unix ns), 0 if never
	Missing    []int   // expected writes whose frame never came
	Duplicates int     // frame items for a write already seen
	Misrouted  int     // items outside the viewer's namespace, or not a write of this run
	Errors     []string
	CPU        time.Duration // user + system during the writes
	Notices    int64
	Requeries  int64
	PointReads int64
	Reads      int64
	// NoticeToFrame and NoticeDispatch are the store's own histograms
	// (pgstore.Stats) over the writes: from a notice's arrival at the
	// listener to the frame, and to the end of its dispatch.
	NoticeToFrame  pgstore.Latency
	NoticeDispatch pgstore.Latency
}

// writerResult is the writer's last line.
type writerResult struct {
	PutEndNS []int64 // per sequence number: when its Put returned (Unix ns)
	Writes   int
	Failed   []int
	Elapsed  time.Duration
	PutP50   time.Duration
	PutP99   time.Duration
	Behind   int // writes that waited for a free Put slot past their tick
}

func viewerPath(v, partitions int) string {
	return fmt.Sprintf("vp%02d/v%06d", v%partitions, v)
}

func viewerQuery(v, partitions int) string {
	return "namespace:" + viewerPath(v, partitions) + " nodeType:Notification"
}

// payload is what each write carries in its content.
type payload struct {
	Seq int   `json:"seq"`
	T   int64 `json:"t"` // the Put's start, Unix nanoseconds
}

func runRole(role string, stdin io.Reader, stdout, stderr io.Writer) error {
	var rc roleConfig
	if err := json.Unmarshal([]byte(role), &rc); err != nil {
		return fmt.Errorf("%s: %w", roleEnv, err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("role", rc.Name)
	ctx := context.Background()
	openCtx, cancel := context.WithTimeout(ctx, openBudget)
	defer cancel()
	store, err := pgstore.Open(openCtx, rc.PGURL, pgstore.Options{Logger: logger, MaxConns: int32(max(8, rc.Writers))})
	if err != nil {
		return fmt.Errorf("%s: opening the store: %w", rc.Name, err)
	}
	defer store.Close()
	switch rc.Role {
	case "replica":
		return runReplica(ctx, store, rc, stdin, stdout)
	case "writer":
		return runWriter(ctx, store, rc, stdout)
	}
	return fmt.Errorf("unknown role %q", rc.Role)
}

// recorder collects a replica's frames, from every live query's goroutine.
type recorder struct {
	mu         sync.Mutex
	seen       []uint8 // per sequence number: times seen (saturating)
	frameAt    []int64 // per sequence number: when it was first seen (Unix ns)
	distinct   int
	latency    []int64
	duplicates int
	misrouted  int
	errs       []string
	progress   chan struct{} // capacity 1: a new write was seen
}

func newRecorder(writes int) *recorder {
	return &recorder{seen: make([]uint8, writes), frameAt: make([]int64, writes), latency: make([]int64, 0, writes), progress: make(chan struct{}, 1)}
}

func (r *recorder) frame(now time.Time, n mesh.Node, prefix string) {
	var p payload
	err := json.Unmarshal(n.Content, &p)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !strings.HasPrefix(n.Path, prefix) || err != nil || p.Seq < 0 || p.Seq >= len(r.seen) {
		r.misrouted++
		return
	}
	if r.seen[p.Seq] > 0 {
		r.duplicates++
		return
	}
	r.seen[p.Seq] = 1
	r.frameAt[p.Seq] = now.UnixNano()
	r.distinct++
	r.latency = append(r.latency, now.Sub(time.Unix(0, p.T)).Microseconds())
	select {
	case r.progress <- struct{}{}:
	default:
	}
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < 20 {
		r.errs = append(r.errs, err.Error())
	}
}

// runReplica subscribes the live queries, says "ready" once every Initial
// has come, then records frames until the coordinator's expectation line
// and every expected frame (or drainBudget), and prints its result.
func runReplica(ctx context.Context, store *pgstore.Store, rc roleConfig, stdin io.Reader, stdout io.Writer) error {
	rec := newRecorder(rc.Writes)
	initials := make(chan struct{}, rc.Live)
	subs := make([]rx.Subscription, 0, rc.Live)
	defer func() {
		for _, s := range subs {
			s.Unsubscribe()
		}
	}()
	for v := range rc.Live {
		prefix := viewerPath(v, rc.Partitions) + "/"
		subs = append(subs, store.Query(viewerQuery(v, rc.Partitions)).Subscribe(rx.NewObserver(func(c mesh.Change) {
			now := time.Now()
			if c.Kind == mesh.Initial {
				initials <- struct{}{}
				return
			}
			for _, n := range c.Items {
				rec.frame(now, n, prefix)
			}
		}, rec.fail, nil)))
	}
	timer := time.NewTimer(initialsBudget)
	defer timer.Stop()
	for i := range rc.Live {
		select {
		case <-initials:
		case <-timer.C:
			return fmt.Errorf("%s: waiting (at most %s) for the live queries' Initials: %d of %d came", rc.Name, initialsBudget, i, rc.Live)
		}
	}
	cpu0, st0 := cpuTime(), store.Stats()
	if rc.CPUProfile != "" {
		f, err := os.Create(rc.CPUProfile + "." + rc.Name)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Fprintln(stdout, "ready")

	line, err := readLine(ctx, stdin, orderBudget, "the coordinator's expectation")
	if err != nil {
		return fmt.Errorf("%s: %w", rc.Name, err)
	}
	var exp expectation
	if err := json.Unmarshal([]byte(line), &exp); err != nil {
		return fmt.Errorf("%s: the coordinator's expectation %q: %w", rc.Name, line, err)
	}
	owed := exp.Writes - len(exp.Failed)
	drain := time.NewTimer(drainBudget)
	defer drain.Stop()
	for done := false; !done; {
		rec.mu.Lock()
		done = rec.distinct >= owed
		rec.mu.Unlock()
		if done {
			break
		}
		select {
		case <-rec.progress:
		case <-drain.C:
			done = true // what is missing is reported
		}
	}
	cpu1, st1 := cpuTime(), store.Stats()

	failed := make(map[int]bool, len(exp.Failed))
	for _, f := range exp.Failed {
		failed[f] = true
	}
	rec.mu.Lock()
	res := replicaResult{Name: rc.Name, LatencyUS: slices.Clone(rec.latency), FrameNS: slices.Clone(rec.frameAt), Duplicates: rec.duplicates,
		Misrouted: rec.misrouted, Errors: slices.Clone(rec.errs), CPU: cpu1 - cpu0,
		Notices: st1.Notices - st0.Notices, Requeries: st1.Requeries - st0.Requeries,
		PointReads: st1.PointReads - st0.PointReads, Reads: st1.Reads - st0.Reads,
		NoticeToFrame: st1.NoticeToFrame.Sub(st0.NoticeToFrame), NoticeDispatch: st1.NoticeDispatch.Sub(st0.NoticeDispatch)}
	for seq := range min(exp.Writes, len(rec.seen)) {
		if rec.seen[seq] == 0 && !failed[seq] {
			res.Missing = append(res.Missing, seq)
		}
	}
	rec.mu.Unlock()
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "result %s\n", out)
	return nil
}

// readLine reads one line from r within budget.
func readLine(ctx context.Context, r io.Reader, budget time.Duration, what string) (string, error) {
	got := make(chan string, 1)
	fail := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		if err != nil {
			fail <- err
			return
		}
		got <- strings.TrimSpace(line)
	}()
	timer := time.NewTimer(budget)
	defer timer.Stop()
	select {
	case line := <-got:
		return line, nil
	case err := <-fail:
		return "", fmt.Errorf("reading %s: %w", what, err)
	case <-timer.C:
		return "", fmt.Errorf("waiting (at most %s) for %s", budget, what)
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	}
}

// runWriter writes rc.Writes notifications, one per rc.Interval, each to a
// random viewer, with at most rc.Writers Puts in flight, and prints its
// result.
func runWriter(ctx context.Context, store *pgstore.Store, rc roleConfig, stdout io.Writer) error {
	type job struct{ seq, viewer int }
	jobs := make(chan job, rc.Writers)
	var (
		mu     sync.Mutex
		puts   = make([]time.Duration, 0, rc.Writes)
		putEnd = make([]int64, rc.Writes)
		failed []int
		firstE error
		wg     sync.WaitGroup
	)
	for range rc.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				start := time.Now()
				content, _ := json.Marshal(payload{Seq: j.seq, T: start.UnixNano()})
				n := mesh.Node{Path: fmt.Sprintf("%s/n%d", viewerPath(j.viewer, rc.Partitions), j.seq), NodeType: "Notification", Content: content}
				_, err := store.Put(ctx, n) // bounded by the store's Operation budget
				end := time.Now()
				took := end.Sub(start)
				mu.Lock()
				putEnd[j.seq] = end.UnixNano()
				puts = append(puts, took)
				if err != nil {
					failed = append(failed, j.seq)
					if firstE == nil {
						firstE = err
					}
				}
				mu.Unlock()
			}
		}()
	}
	// Warm up: every Put slot opens its pool connection before the
	// schedule starts (the paths concern no live query).
	var warm sync.WaitGroup
	warmErrs := make(chan error, rc.Writers)
	for i := range rc.Writers {
		warm.Add(1)
		go func() {
			defer warm.Done()
			_, err := store.Put(ctx, mesh.Node{Path: fmt.Sprintf("vp00/warmup/w%d", i), NodeType: "Warmup"})
			warmErrs <- err
		}()
	}
	warm.Wait() // each Put is bounded by the store's Operation budget
	close(warmErrs)
	for err := range warmErrs {
		if err != nil {
			close(jobs)
			wg.Wait()
			return fmt.Errorf("warming up the writer: %w", err)
		}
	}
	rng := rand.New(rand.NewPCG(rc.Seed, 25))
	ticker := time.NewTicker(rc.Interval)
	start := time.Now()
	behind := 0
	for seq := range rc.Writes {
		<-ticker.C // fires every Interval; never blocks longer
		j := job{seq, rng.IntN(rc.Live)}
		select {
		case jobs <- j:
		default:
			behind++
			jobs <- j // waits for a Put to finish; each is bounded by the store's budget
		}
	}
	ticker.Stop()
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	if firstE != nil {
		slog.Warn("pglive writer: some writes failed", "failed", len(failed), "first", firstE)
	}
	slices.Sort(puts)
	res := writerResult{PutEndNS: putEnd, Writes: rc.Writes, Failed: failed, Elapsed: elapsed, Behind: behind,
		PutP50: quantile(puts, 0.50), PutP99: quantile(puts, 0.99)}
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "result %s\n", out)
	return nil
}

// quantile returns the q-quantile of sorted xs (zero when empty).
func quantile[T any](xs []T, q float64) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	return xs[min(len(xs)-1, int(float64(len(xs))*q))]
}
