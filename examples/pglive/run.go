package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
)

// Budgets of the coordinator's waits.
const (
	readyBudget   = initialsBudget + openBudget // a replica's "ready"
	writerSlack   = 2 * time.Minute             // the writer's result, beyond its schedule
	resultBudget  = drainBudget + time.Minute   // a replica's result after the expectation
	childExitWait = 30 * time.Second            // a role's exit after its result
)

// summary is what a run measured.
type summary struct {
	replicas, live, writes int
	putP50, putP99         time.Duration // the writer's Puts, its queueing for a Put slot excluded
	p50, p99               time.Duration // write to frame: from the Put's start, over both replicas
	ackP50, ackP99         time.Duration // from the Put's return to the frame (negative: the frame came first)
	noticeP50, noticeP99   time.Duration // notice to frame: from the notice's arrival at a replica's listener
	dispatchP50            time.Duration // from the notice's arrival to the end of the listener's dispatch
	dispatchP99            time.Duration
	cpuPerNotice           time.Duration
	lost                   int // (replica, write) pairs whose frame never came
	duplicates, misrouted  int
	writeErrors            int
	observerErrors         int
}

func (s summary) String() string {
	return fmt.Sprintf("summary: replicas=%d live_queries=%d writes=%d notice_to_frame_p50_ms=%.2f notice_to_frame_p99_ms=%.2f notice_dispatch_p50_ms=%.2f notice_dispatch_p99_ms=%.2f put_p50_ms=%.2f put_p99_ms=%.2f write_to_frame_p50_ms=%.2f write_to_frame_p99_ms=%.2f put_return_to_frame_p50_ms=%.2f put_return_to_frame_p99_ms=%.2f replica_cpu_us_per_notice=%.1f lost=%d duplicates=%d misrouted=%d write_errors=%d observer_errors=%d",
		s.replicas, s.live, s.writes, ms(s.noticeP50), ms(s.noticeP99), ms(s.dispatchP50), ms(s.dispatchP99), ms(s.putP50), ms(s.putP99),
		ms(s.p50), ms(s.p99), ms(s.ackP50), ms(s.ackP99), float64(s.cpuPerNotice.Nanoseconds())/1e3,
		s.lost, s.duplicates, s.misrouted, s.writeErrors, s.observerErrors)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

const replicas = 2

// run is the coordinator: it provides the database, seeds the partitions,
// starts two replicas and then the writer, and collects their results.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (sum summary, err error) {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return summary{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.budget)
	defer cancel()
	stderr = &lockedWriter{w: stderr} // the three children write their logs to it at once
	url := cfg.pg
	if url == "" {
		srv, err := pgtest.Config{}.Start(ctx)
		if err != nil {
			return summary{}, fmt.Errorf("starting PostgreSQL: %w", err)
		}
		defer func() {
			if stopErr := srv.Stop(); stopErr != nil && err == nil {
				err = fmt.Errorf("stopping PostgreSQL: %w", stopErr)
			}
		}()
		if url, err = srv.CreateDatabase(ctx, "pglive"); err != nil {
			return summary{}, err
		}
	}
	if err := seed(ctx, url, cfg); err != nil {
		return summary{}, err
	}
	base := roleConfig{PGURL: url, Live: cfg.live, Writes: cfg.writes, Interval: cfg.interval,
		Partitions: cfg.partitions, Writers: cfg.writers, CPUProfile: cfg.cpuProfile}

	var reps []*child
	defer func() {
		for _, c := range reps {
			c.stop()
		}
	}()
	for i := range replicas {
		rc := base
		rc.Role, rc.Name = "replica", fmt.Sprintf("replica%d", i+1)
		c, err := startChild(ctx, rc, stderr)
		if err != nil {
			return summary{}, err
		}
		reps = append(reps, c)
	}
	t0 := time.Now()
	for _, c := range reps {
		if _, err := c.expect(ctx, "ready", readyBudget); err != nil {
			return summary{}, err
		}
	}
	fmt.Fprintf(stdout, "%d replicas with %d live queries each ready in %s\n", replicas, cfg.live, time.Since(t0).Round(time.Millisecond))

	wc := base
	wc.Role, wc.Name, wc.Seed = "writer", "writer", 4
	w, err := startChild(ctx, wc, stderr)
	if err != nil {
		return summary{}, err
	}
	defer w.stop()
	line, err := w.expect(ctx, "result ", time.Duration(cfg.writes)*cfg.interval+writerSlack)
	if err != nil {
		return summary{}, err
	}
	var wr writerResult
	if err := json.Unmarshal([]byte(line), &wr); err != nil {
		return summary{}, fmt.Errorf("the writer's result: %w", err)
	}
	fmt.Fprintf(stdout, "writer: %d writes in %s (%.0f/s), Put p50 %.2f ms p99 %.2f ms, %d waited for a Put slot, %d failed\n",
		wr.Writes, wr.Elapsed.Round(time.Millisecond), float64(wr.Writes)/wr.Elapsed.Seconds(), ms(wr.PutP50), ms(wr.PutP99), wr.Behind, len(wr.Failed))

	exp, err := json.Marshal(expectation{Writes: wr.Writes, Failed: wr.Failed})
	if err != nil {
		return summary{}, err
	}
	sum = summary{replicas: replicas, live: cfg.live, writes: wr.Writes, writeErrors: len(wr.Failed), putP50: wr.PutP50, putP99: wr.PutP99}
	var all []int64
	var noticeToFrame, dispatch pgstore.Latency
	var afterAck []time.Duration
	var cpu time.Duration
	var notices int64
	for _, c := range reps {
		if _, err := fmt.Fprintf(c.stdin, "%s\n", exp); err != nil {
			return summary{}, fmt.Errorf("telling %s what to expect: %w", c.name, err)
		}
	}
	for _, c := range reps {
		line, err := c.expect(ctx, "result ", resultBudget)
		if err != nil {
			return summary{}, err
		}
		var rr replicaResult
		if err := json.Unmarshal([]byte(line), &rr); err != nil {
			return summary{}, fmt.Errorf("%s's result: %w", c.name, err)
		}
		lat := toDurations(rr.LatencyUS)
		slices.Sort(lat)
		perNotice := time.Duration(0)
		if rr.Notices > 0 {
			perNotice = rr.CPU / time.Duration(rr.Notices)
		}
		fmt.Fprintf(stdout, "%s: %d frames; notice to frame p50 %.2f ms p99 %.2f ms (dispatch p50 %.2f ms p99 %.2f ms); write to frame p50 %.2f ms p99 %.2f ms max %.2f ms; %d notices, CPU %s (%.1f µs per notice); %d requeries, %d point reads, %d whole reads; %d missing, %d duplicates, %d misrouted\n",
			rr.Name, len(lat), ms(rr.NoticeToFrame.Quantile(0.50)), ms(rr.NoticeToFrame.Quantile(0.99)),
			ms(rr.NoticeDispatch.Quantile(0.50)), ms(rr.NoticeDispatch.Quantile(0.99)),
			ms(quantile(lat, 0.50)), ms(quantile(lat, 0.99)), ms(quantile(lat, 1)), rr.Notices,
			rr.CPU.Round(time.Millisecond), float64(perNotice.Nanoseconds())/1e3, rr.Requeries, rr.PointReads, rr.Reads,
			len(rr.Missing), rr.Duplicates, rr.Misrouted)
		for _, e := range rr.Errors {
			fmt.Fprintf(stdout, "%s: observer error: %s\n", rr.Name, e)
		}
		all = append(all, rr.LatencyUS...)
		noticeToFrame = noticeToFrame.Add(rr.NoticeToFrame)
		dispatch = dispatch.Add(rr.NoticeDispatch)
		for seq, at := range rr.FrameNS {
			if at != 0 && seq < len(wr.PutEndNS) && wr.PutEndNS[seq] != 0 {
				afterAck = append(afterAck, time.Duration(at-wr.PutEndNS[seq]))
			}
		}
		cpu += rr.CPU
		notices += rr.Notices
		sum.lost += len(rr.Missing)
		sum.duplicates += rr.Duplicates
		sum.misrouted += rr.Misrouted
		sum.observerErrors += len(rr.Errors)
	}
	lat := toDurations(all)
	slices.Sort(lat)
	sum.p50, sum.p99 = quantile(lat, 0.50), quantile(lat, 0.99)
	sum.noticeP50, sum.noticeP99 = noticeToFrame.Quantile(0.50), noticeToFrame.Quantile(0.99)
	sum.dispatchP50, sum.dispatchP99 = dispatch.Quantile(0.50), dispatch.Quantile(0.99)
	slices.Sort(afterAck)
	sum.ackP50, sum.ackP99 = quantile(afterAck, 0.50), quantile(afterAck, 0.99)
	if notices > 0 {
		sum.cpuPerNotice = cpu / time.Duration(notices)
	}
	for _, c := range append(reps, w) {
		if err := c.wait(); err != nil {
			return summary{}, err
		}
	}
	reps = nil
	fmt.Fprintln(stdout, sum)
	return sum, nil
}

func toDurations(us []int64) []time.Duration {
	out := make([]time.Duration, len(us))
	for i, u := range us {
		out[i] = time.Duration(u) * time.Microsecond
	}
	return out
}

// seed writes one notification in each partition, so every partition's
// schema exists before the replicas' live queries are routed.
func seed(ctx context.Context, url string, cfg config) error {
	openCtx, cancel := context.WithTimeout(ctx, openBudget)
	defer cancel()
	store, err := pgstore.Open(openCtx, url, pgstore.Options{})
	if err != nil {
		return fmt.Errorf("opening the store to seed it: %w", err)
	}
	defer store.Close()
	for p := range min(cfg.partitions, cfg.live) {
		if _, err := store.Put(ctx, mesh.Node{Path: viewerPath(p, cfg.partitions) + "/seed", NodeType: "Notification"}); err != nil {
			return fmt.Errorf("seeding partition %d: %w", p, err)
		}
	}
	return nil
}

// child is a replica or the writer: this program again, with its role.
type child struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *lines        // its stdout
	exited chan struct{} // closed when the process has been waited for
	err    error         // the process's exit, once exited is closed
}

// maxUnread bounds the lines of a child's output the coordinator has not
// read yet. A child writes the lines the coordinator waits for ("ready",
// then "result ...", the last) and nothing else on stdout, but the
// coordinator reads one child's output only while it waits for it: a
// reader that could block would leave a replica blocked on a full pipe,
// its frames timed late, while the coordinator waits for the writer. So
// the reader never blocks: past maxUnread unread lines it drops the
// oldest and counts it (a line it waits for is the newest one then), and
// the count is in the error of a wait that fails.
const maxUnread = 16

// lines is a child's output, line by line, read by a goroutine of its own
// that never waits for the coordinator.
type lines struct {
	more chan struct{} // capacity 1: a line came, or the end

	mu      sync.Mutex
	unread  []string // oldest first; at most maxUnread
	dropped int
	ended   bool
	err     error // why reading ended early (not EOF)
}

// readLines reads r until its end on a goroutine of its own and then
// calls done.
func readLines(r io.Reader, done func()) *lines {
	l := &lines{more: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 64<<20) // a replica's result holds every latency
		for sc.Scan() {
			l.add(sc.Text())
		}
		l.mu.Lock()
		l.ended, l.err = true, sc.Err()
		l.mu.Unlock()
		l.signal()
		done()
	}()
	return l
}

func (l *lines) add(line string) {
	l.mu.Lock()
	if len(l.unread) == maxUnread {
		l.unread = slices.Delete(l.unread, 0, 1)
		l.dropped++
	}
	l.unread = append(l.unread, line)
	l.mu.Unlock()
	l.signal()
}

func (l *lines) signal() {
	select {
	case l.more <- struct{}{}:
	default: // one is pending
	}
}

// next returns the oldest unread line; ok is false when there is none now,
// and ended then says whether none will come.
func (l *lines) next() (line string, ok, ended bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.unread) > 0 {
		line, l.unread = l.unread[0], l.unread[1:]
		return line, true, false
	}
	return "", false, l.ended
}

// lost says what was lost of the output, for an error: "" when nothing.
func (l *lines) lost() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s []string
	if l.dropped > 0 {
		s = append(s, fmt.Sprintf("%d lines of its output were dropped unread", l.dropped))
	}
	if l.err != nil {
		s = append(s, fmt.Sprintf("reading its output failed: %v", l.err))
	}
	return strings.Join(s, "; ")
}

func startChild(ctx context.Context, rc roleConfig, stderr io.Writer) (*child, error) {
	conf, err := json.Marshal(rc)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%s: finding this program to run it again: %w", rc.Name, err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), roleEnv+"="+string(conf))
	cmd.Stderr = stderr
	cmd.WaitDelay = childExitWait
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", rc.Name, err)
	}
	c := &child{name: rc.Name, cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	c.out = readLines(stdout, func() {
		c.err = cmd.Wait()
		close(c.exited)
	})
	return c, nil
}

// expect waits, within budget, for the child's next line starting with
// prefix and returns the rest of it.
func (c *child) expect(ctx context.Context, prefix string, budget time.Duration) (string, error) {
	what := fmt.Sprintf("%s's %q line", c.name, strings.TrimSpace(prefix))
	timer := time.NewTimer(budget)
	defer timer.Stop()
	lost := func() string {
		if l := c.out.lost(); l != "" {
			return " (" + l + ")"
		}
		return ""
	}
	for {
		line, ok, ended := c.out.next()
		if ok {
			if rest, found := strings.CutPrefix(line, prefix); found {
				return rest, nil
			}
			continue
		}
		if ended {
			<-c.exited // the reader waits for the process right after the end of its output
			return "", fmt.Errorf("waiting for %s: the process ended (%v)%s", what, c.err, lost())
		}
		select {
		case <-c.out.more:
		case <-timer.C:
			return "", fmt.Errorf("waiting (at most %s) for %s%s", budget, what, lost())
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %s: %w%s", what, ctx.Err(), lost())
		}
	}
}

// wait closes the child's stdin and waits (at most childExitWait) for it
// to exit cleanly.
func (c *child) wait() error {
	_ = c.stdin.Close()
	timer := time.NewTimer(childExitWait)
	defer timer.Stop()
	select {
	case <-c.exited:
		if c.err != nil {
			return fmt.Errorf("%s exited: %w", c.name, c.err)
		}
		return nil
	case <-timer.C:
		c.stop()
		return fmt.Errorf("waiting (at most %s) for %s to exit", childExitWait, c.name)
	}
}

// stop kills the child if it still runs and waits for it (its pipes close
// when it dies, so this returns).
func (c *child) stop() {
	_ = c.stdin.Close()
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Kill()
	<-c.exited // its output ends when it dies; the reader never waits for us
}

// lockedWriter serialises writes from the children's log copiers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
