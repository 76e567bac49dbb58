//go:build linux

// Command bellload measures examples/bell at scale: it builds and starts the
// bell server (embedded store, loopback), opens many Server-Sent Event
// streams to it as distinct viewers plus some as global admins, and times
// deliveries at the client end of each stream.
//
// The bell lets in only users it issued tokens to, and caps streams and
// connections. bellload starts it with the load-run flags that opt out of
// the demo's limits by name (-users, -admins, -tokens, -max-streams,
// -max-conns; see examples/bell), reads the tokens file (mode 0600) and
// signs each stream in as its own user with Authorization: Bearer. The
// demo's global admin ops sends every notification.
//
//	go run ./examples/bellload -viewers 10000 -admins 1000
//
// It measures three things: the server's resident memory with every stream
// open and idle; one notification sent to one viewer (POST /send), from its
// commit to the "bell" event carrying it; and an Admin notification (to
// Admin, which only a global admin may send), from its commit to the event
// on the last of the admin streams. The commit's time is the
// notification's createdAt, which the bell stamps just before it writes
// it (same machine, same clock); the times from the start of the request
// are printed too. Once open, the streams are read by a few goroutines
// waiting on epoll (-readers), the sockets epoll reports read in io_uring
// batches (one system call per batch; a read(2) per stream with -read-each
// or where io_uring is unavailable), and no goroutine per stream; an
// arrival is timed when epoll reports its socket.
// It ends with
//
//	summary: viewers=N admins=M rss_mb=X deliver_p50_ms=X deliver_p99_ms=X broadcast_p50_ms=X broadcast_p99_ms=X
//
// where the broadcast quantiles are over the broadcasts, each the time to
// its last stream. Every wait is bounded (-bound); the run stops the server
// when it ends. Each stream holds a file descriptor on both sides: raise
// ulimit -n above viewers+admins first. Linux only (epoll, /proc).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/meshrx/meshrx/examples/bell/bellstate"
	"github.com/meshrx/meshrx/internal/quantile"
)

type config struct {
	viewers, admins   int
	sends, broadcasts int
	dial              int // streams opened at once
	bound             time.Duration
	bin               string // a built bell binary; empty builds pkg
	pkg               string // the bell's package, as go build names it
	profile           string // a directory for the server's profiles with every stream idle; empty: none
	profileFor        time.Duration
	readers           int    // goroutines reading the streams (epoll)
	readEach          bool   // -read-each: a read(2) per ready stream, not io_uring batches
	bellCPUs          string // run the bell on these CPUs (taskset -c); empty: anywhere
}

func main() {
	var c config
	fs := flag.NewFlagSet("bellload", flag.ContinueOnError)
	fs.IntVar(&c.viewers, "viewers", 10_000, "distinct viewers, one stream each")
	fs.IntVar(&c.admins, "admins", 1_000, "streams of global admins (one generated admin each), who see Admin notifications")
	fs.IntVar(&c.sends, "sends", 200, "notifications sent to one random viewer each, one at a time")
	fs.IntVar(&c.broadcasts, "broadcasts", 5, "Admin notifications, one at a time")
	fs.IntVar(&c.dial, "dial", 64, "streams opened concurrently")
	fs.DurationVar(&c.bound, "bound", 2*time.Minute, "bound of each wait: the server starting, streams opening, one delivery")
	fs.StringVar(&c.bin, "bin", "", "bell binary to run; empty builds -pkg")
	fs.StringVar(&c.profile, "profile", "", "write the server's heap and goroutine profiles, with every stream open and idle, to this directory (starts the bell with -pprof)")
	fs.DurationVar(&c.profileFor, "profile-for", 10*time.Second, "with -profile: how long the bell's CPU profile of the broadcasts runs")
	fs.IntVar(&c.readers, "readers", 1, "goroutines reading the streams (each waits on epoll for its share)")
	fs.BoolVar(&c.readEach, "read-each", false, "read each ready stream with its own read(2), not in io_uring batches (used where io_uring is available)")
	fs.StringVar(&c.bellCPUs, "bell-cpus", "", "run the bell on these CPUs only (taskset -c LIST); run bellload itself under taskset -c on others")
	fs.StringVar(&c.pkg, "pkg", "./examples/bell", "the bell's package, built when -bin is empty (the default is relative to the module root)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bellload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, out io.Writer) error {
	if c.viewers < 1 || c.sends < 1 || c.admins < 0 || c.broadcasts < 0 || c.dial < 1 || c.bound <= 0 || c.readers < 1 {
		return errors.New("-viewers, -sends, -dial, -readers and -bound must be positive; -admins and -broadcasts not negative")
	}
	if c.profile != "" && c.profileFor < time.Second {
		return errors.New("-profile-for must be at least 1s")
	}
	srv, err := startBell(ctx, c)
	if err != nil {
		return err
	}
	defer srv.stop()
	return measure(ctx, srv, c, out)
}

// measure runs the measurements against the bell srv.
func measure(ctx context.Context, srv *bell, c config, out io.Writer) error {
	fmt.Fprintf(out, "bell pid %d on %s\n", srv.cmd.Process.Pid, srv.base)
	if srv.pprof != "" {
		fmt.Fprintf(out, "bell pprof on %s\n", srv.pprof)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	defer client.CloseIdleConnections()
	streams := make([]*stream, 0, c.viewers+c.admins)
	for v := range c.viewers {
		streams = append(streams, srv.stream(fmt.Sprintf("user%05d", v+1)))
	}
	for a := range c.admins {
		streams = append(streams, srv.stream(fmt.Sprintf("admin%05d", a+1)))
	}
	for i, s := range streams {
		if s.token == "" {
			return fmt.Errorf("the bell's tokens file has no token for %s", s.viewer)
		}
		s.idx = i
	}
	sender := srv.tokens[senderName]
	if sender == "" {
		return fmt.Errorf("the bell's tokens file has no token for the sender %s", senderName)
	}
	rs, err := newReaders(streams, c.readers, !c.readEach)
	if err != nil {
		return err
	}
	defer rs.close()
	began := time.Now()
	if err := openAll(ctx, rs, srv.base, streams, c); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d streams open in %s\n", len(streams), time.Since(began).Round(time.Millisecond))
	rss, err := rssOf(srv.cmd.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "server RSS %.1f MB, %.1f KB per stream\n", float64(rss)/(1<<20), float64(rss)/1024/float64(len(streams)))
	if c.profile != "" {
		if err := profile(ctx, client, srv.pprof, c.profile, len(streams), out); err != nil {
			return err
		}
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 25))
	var deliver, deliverReq []time.Duration
	sent := make([][]string, len(streams)) // by stream: the titles sent to it (an admin's: every broadcast)
	for i := range c.sends {
		v := rng.IntN(c.viewers)
		sent[v] = append(sent[v], fmt.Sprintf("load-%d", i))
		d, err := timeDelivery(ctx, client, srv.base, sender, fmt.Sprintf("load-%d", i), streams[v].viewer, rs, v, v+1, c.bound)
		if err != nil {
			return fmt.Errorf("send %d to %s: %w", i, streams[v].viewer, err)
		}
		deliver, deliverReq = append(deliver, d.fromCommit...), append(deliverReq, d.fromRequest...)
	}
	fmt.Fprintf(out, "one notification to one viewer, %d sends: from the commit p50 %.2f ms p99 %.2f ms max %.2f ms; from the request p50 %.2f ms p99 %.2f ms\n",
		len(deliver), ms(quantile.Of(deliver, 0.50)), ms(quantile.Of(deliver, 0.99)), ms(quantile.Of(deliver, 1)),
		ms(quantile.Of(deliverReq, 0.50)), ms(quantile.Of(deliverReq, 0.99)))

	var broadcast, broadcastReq []time.Duration // per broadcast: its last stream
	if c.broadcasts > 0 && c.admins > 0 {
		stopProfiles, err := cpuProfiles(ctx, client, srv.pprof, c, out)
		if err != nil {
			return err
		}
		cpuBefore, err1 := cpuOf(srv.cmd.Process.Pid)
		ownBefore, err2 := cpuOf(os.Getpid())
		swBefore, err3 := switchesOf(srv.cmd.Process.Pid)
		ownSwBefore, err4 := switchesOf(os.Getpid())
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			stopProfiles()
			return err
		}
		for i := range c.broadcasts {
			title := fmt.Sprintf("broadcast-%d", i)
			d, err := timeDelivery(ctx, client, srv.base, sender, title, adminAddressee, rs, c.viewers, len(streams), c.bound)
			if err != nil {
				stopProfiles()
				return fmt.Errorf("broadcast %d: %w", i, err)
			}
			broadcast, broadcastReq = append(broadcast, d.last()), append(broadcastReq, slices.Max(d.fromRequest))
			for a := c.viewers; a < len(streams); a++ {
				sent[a] = append(sent[a], title)
			}
		}
		cpuAfter, err1 := cpuOf(srv.cmd.Process.Pid)
		ownAfter, err2 := cpuOf(os.Getpid())
		swAfter, err3 := switchesOf(srv.cmd.Process.Pid)
		ownSwAfter, err4 := switchesOf(os.Getpid())
		stopProfiles()
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return err
		}
		fmt.Fprintf(out, "server CPU %.1f ms, bellload's own %.1f ms, per broadcast to %d admin streams\n",
			ms(cpuAfter-cpuBefore)/float64(c.broadcasts), ms(ownAfter-ownBefore)/float64(c.broadcasts), c.admins)
		fmt.Fprintf(out, "context switches per broadcast (its threads' sleeps and preemptions): server %d, bellload's own %d\n",
			(swAfter-swBefore)/int64(c.broadcasts), (ownSwAfter-ownSwBefore)/int64(c.broadcasts))
		fmt.Fprintf(out, "Admin broadcast to %d streams, %d broadcasts, commit to the last stream: p50 %.2f ms p99 %.2f ms max %.2f ms; from the request p50 %.2f ms p99 %.2f ms\n",
			c.admins, len(broadcast), ms(quantile.Of(broadcast, 0.50)), ms(quantile.Of(broadcast, 0.99)), ms(quantile.Of(broadcast, 1)),
			ms(quantile.Of(broadcastReq, 0.50)), ms(quantile.Of(broadcastReq, 0.99)))
	}
	if n := rs.ended.Load(); n > 0 {
		return errors.Join(fmt.Errorf("the bell ended %d of %d streams during the run", n, len(streams)), rs.failed())
	}
	if err := rs.failed(); err != nil {
		return err
	}
	rs.close() // the readers are done with the states
	if err := verify(streams, sent, c.viewers); err != nil {
		return err
	}
	fmt.Fprintf(out, "every stream's state holds what was sent to it, applied in order (%d streams checked)\n", len(streams))
	fmt.Fprintf(out, "summary: viewers=%d admins=%d rss_mb=%.1f deliver_p50_ms=%.2f deliver_p99_ms=%.2f broadcast_p50_ms=%.2f broadcast_p99_ms=%.2f\n",
		c.viewers, c.admins, float64(rss)/(1<<20), ms(quantile.Of(deliver, 0.50)), ms(quantile.Of(deliver, 0.99)),
		ms(quantile.Of(broadcast, 0.50)), ms(quantile.Of(broadcast, 0.99)))
	return nil
}

// cpuProfiles starts, with -profile, a CPU profile of the bell (its
// /debug/pprof/profile, -profile-seconds long) and of bellload itself;
// stop ends bellload's and waits, within the profile's length and a
// minute, for the bell's.
func cpuProfiles(ctx context.Context, client *http.Client, pprofBase string, c config, out io.Writer) (stop func(), err error) {
	if c.profile == "" {
		return func() {}, nil
	}
	own, err := os.Create(filepath.Join(c.profile, "bellload-cpu.pb.gz"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(own); err != nil {
		own.Close()
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, c.profileFor+time.Minute)
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			u := fmt.Sprintf("%sprofile?seconds=%d", pprofBase, int(c.profileFor/time.Second))
			req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s", resp.Status, b)
			}
			return os.WriteFile(filepath.Join(c.profile, "bell-cpu.pb.gz"), b, 0o644)
		}()
	}()
	return func() {
		pprof.StopCPUProfile()
		own.Close()
		defer cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(out, "-profile: the bell's CPU profile: %v\n", err)
			return
		}
		fmt.Fprintf(out, "CPU profiles of the broadcasts (the bell's first %s) in %s: bell-cpu.pb.gz, bellload-cpu.pb.gz\n", c.profileFor, c.profile)
	}, nil
}

// senderName is the bell's demo global admin, who sends every
// notification of the run (a global admin may send to Admin).
const senderName = "ops"

// adminAddressee is the addressee of the Admin notifications.
const adminAddressee = "Admin"

// bell is the server under load.
type bell struct {
	cmd    *exec.Cmd
	base   string
	dir    string
	tokens map[string]string // user → token, from the bell's -tokens file
	pprof  string            // the bell's net/http/pprof, with -profile
}

// stream returns an unopened stream of viewer, signed in with its token.
func (b *bell) stream(viewer string) *stream {
	return &stream{viewer: viewer, token: b.tokens[viewer], fd: -1}
}

// readTokens reads the "user token" lines the bell wrote with -tokens.
func readTokens(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the bell's tokens: %w", err)
	}
	out := map[string]string{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		user, tok, ok := strings.Cut(line, " ")
		if !ok || user == "" || tok == "" {
			return nil, fmt.Errorf("the bell's tokens file %s: line %d is not \"user token\"", path, i+1)
		}
		out[user] = tok
	}
	return out, nil
}

// buildBudget bounds building the bell when no -bin is given.
const buildBudget = 10 * time.Minute

// startBell builds (unless -bin) and starts the bell on a free loopback
// port, and waits, within the bound, for it to say where it listens.
func startBell(ctx context.Context, c config) (*bell, error) {
	dir, err := os.MkdirTemp("", "bellload")
	if err != nil {
		return nil, err
	}
	bin := c.bin
	if bin == "" {
		bin = filepath.Join(dir, "bell")
		// Compiling has a budget of its own, not the bound of one wait on
		// the bell: a busy machine with a cold build cache takes minutes.
		bctx, cancel := context.WithTimeout(ctx, max(c.bound, buildBudget))
		defer cancel()
		build := exec.CommandContext(bctx, "go", "build", "-o", bin, c.pkg)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("building %s (run from the module root, or pass -bin): %w", c.pkg, err)
		}
	}
	// The load-run flags: a user per stream, their tokens in a file only
	// this user can read, and caps above the run's streams (each stream
	// is one connection; the rest is room for the sends).
	tokens := filepath.Join(dir, "tokens")
	n := c.viewers + c.admins
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0",
		"-users", strconv.Itoa(c.viewers), "-admins", strconv.Itoa(c.admins), "-tokens", tokens,
		"-max-streams", strconv.Itoa(n), "-max-conns", strconv.Itoa(n+64))
	if c.bellCPUs != "" {
		// taskset execs the bell: the process (and its pid) is the bell's.
		cmd = exec.Command("taskset", append([]string{"-c", c.bellCPUs}, cmd.Args...)...)
	}
	if c.profile != "" {
		cmd.Args = append(cmd.Args, "-pprof", "127.0.0.1:0")
	}
	// The server logs each stream, which is not what is measured; the
	// first lines are kept for the reason of a bell that exits before it
	// listens.
	stderr := &head{max: 4 << 10}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	b := &bell{cmd: cmd, dir: dir}
	found := make(chan string, 1)
	pprofAt := make(chan string, 1)
	ended := make(chan struct{}) // its stdout ended: it exited
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "pprof on "); ok {
				pprofAt <- addr
			}
			if addr, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				select {
				case found <- addr:
				default:
				}
			}
		}
	}()
	timer := time.NewTimer(c.bound)
	defer timer.Stop()
	select {
	case b.base = <-found:
		if c.profile != "" {
			select {
			case b.pprof = <-pprofAt: // printed before "listening on"
			default:
				b.stop()
				return nil, errors.New("-profile: the bell did not say where it serves pprof (a bell without -pprof?)")
			}
		}
		// The bell writes the tokens before it listens.
		if b.tokens, err = readTokens(tokens); err != nil {
			b.stop()
			return nil, err
		}
		return b, nil
	case <-ended:
		b.stop()
		return nil, fmt.Errorf("the bell exited before it listened (%v; bellload passes -viewers as its -users, -admins as its -admins): %s",
			cmd.ProcessState, strings.TrimSpace(stderr.String()))
	case <-timer.C:
		b.stop()
		return nil, fmt.Errorf("the bell did not say where it listens within %s", c.bound)
	case <-ctx.Done():
		b.stop()
		return nil, ctx.Err()
	}
}

// head keeps the first max bytes written to it: a bell that exits before
// it listens says why first, and the stream logs after that cost little.
type head struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (h *head) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (h *head) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.b)
}

// stop ends the server (SIGTERM, then kill after 10s) and removes the build.
func (b *bell) stop() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		_ = b.cmd.Process.Kill()
		<-done
	}
	_ = os.RemoveAll(b.dir)
}

// stream is one viewer's event stream.
type stream struct {
	viewer string
	token  string // the viewer's, sent as Authorization: Bearer
	idx    int    // its place among the run's streams
	fd     int    // its socket once open (read by one reader); -1 before and after

	// The stream's reader's own (open's, before).
	split  bellstate.Splitter
	state  bellstate.State
	seen   *round // the last round this stream reported
	turn   uint64 // the reader's batch it was last taken into (read once a batch)
	ending bool   // epoll reported its peer's close (or an error): read until it shows
}

// openAll opens every stream, c.dial at a time, and hands each to rs once
// it has received its first bell state, or fails naming the first that
// did not.
func openAll(ctx context.Context, rs *readers, base string, streams []*stream, c config) error {
	ctx, cancel := context.WithTimeout(ctx, c.bound)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(c.dial)
	for _, s := range streams {
		g.Go(func() error {
			if err := s.open(gctx, base, c.bound); err != nil {
				return err
			}
			return rs.add(s, s.fd)
		})
	}
	err := g.Wait()
	if err != nil && ctx.Err() != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the streams did not all open within %s: %w", c.bound, err)
	}
	return err
}

// open requests s's event stream and reads it until its first bell state
// (headers, hello, bell), within bound; it then keeps the socket (s.fd,
// non-blocking) for a reader.
func (s *stream) open(ctx context.Context, base string, bound time.Duration) error {
	fail := func(err error) error { return fmt.Errorf("stream of %s: %w", s.viewer, err) }
	u, err := url.Parse(base)
	if err != nil {
		return fail(err)
	}
	d := net.Dialer{Timeout: bound}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return fail(err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(bound))
	req, err := http.NewRequest(http.MethodGet, base+"/events?viewer="+url.QueryEscape(s.viewer), nil)
	if err != nil {
		return fail(err)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if err := req.Write(conn); err != nil {
		return fail(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return fail(err)
	}
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("status %s", resp.Status))
	}
	if err := s.firstState(resp.Body, br); err != nil {
		return fail(err)
	}
	// The socket is the reader's from here: a descriptor of its own,
	// non-blocking, outside Go's poller. Whatever net/http read ahead is
	// an older state, not awaited.
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return fail(errors.New("not a socket"))
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return fail(err)
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(f uintptr) { fd, dupErr = syscall.Dup(int(f)) }); err != nil {
		return fail(err)
	}
	if dupErr != nil {
		return fail(dupErr)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return fail(err)
	}
	s.fd = fd
	return nil
}

// firstState reads body until the stream's state is applied (its first
// "bell" event), then applies what br, under body, read ahead: the events
// after it belong to the state the reader keeps on applying.
func (s *stream) firstState(body io.Reader, br *bufio.Reader) error {
	buf := make([]byte, 4096)
	for s.state.ID() == 0 {
		n, err := body.Read(buf)
		if n > 0 {
			if ferr := s.feed(buf[:n], nil); ferr != nil {
				return ferr
			}
		}
		if err != nil && s.state.ID() == 0 {
			return fmt.Errorf("before the first bell state: %w", err)
		}
	}
	if n := br.Buffered(); n > 0 {
		ahead, _ := br.Peek(n)
		return s.feed(ahead, nil)
	}
	return nil
}

// verify checks, once the readers are stopped, that each stream's state
// holds every notification sent to it (sent, by stream), and that every
// admin's (streams[firstAdmin:]) holds the same number: they show the
// same Admin notifications.
func verify(streams []*stream, sent [][]string, firstAdmin int) error {
	var errs []error
	for i, s := range streams {
		if s.state.ID() == 0 {
			errs = append(errs, fmt.Errorf("stream of %s: no state at the end", s.viewer))
			continue
		}
		for _, title := range sent[i] {
			if s.state.Find(title) == nil {
				errs = append(errs, fmt.Errorf("stream of %s: %q is not in its state at the end", s.viewer, title))
			}
		}
		if i > firstAdmin && s.state.Len() != streams[firstAdmin].state.Len() {
			errs = append(errs, fmt.Errorf("stream of %s: %d notifications at the end, %s's %d", s.viewer, s.state.Len(),
				streams[firstAdmin].viewer, streams[firstAdmin].state.Len()))
		}
		if len(errs) >= 10 {
			errs = append(errs, errors.New("(and maybe more)"))
			break
		}
	}
	return errors.Join(errs...)
}

// bellloadMessage is the message of every notification bellload sends.
const bellloadMessage = "bellload"

// delivery is one awaited notification's arrival on each stream it
// reached: from its commit (the createdAt the bell stamps just before it
// writes it) and from the start of the request that sent it.
type delivery struct {
	fromCommit, fromRequest []time.Duration
}

// last returns the delivery's slowest stream, from the commit.
func (d delivery) last() time.Duration { return slices.Max(d.fromCommit) }

// timeDelivery sends one notification titled title to recipient (a user,
// or Admin) as the user of the token sender, and times its arrival on each
// of streams[lo:hi] (read by rs).
func timeDelivery(ctx context.Context, client *http.Client, base, sender, title, recipient string, rs *readers, lo, hi int, bound time.Duration) (delivery, error) {
	r := newRound(title, recipient, bellloadMessage, lo, hi)
	if hi > lo {
		rs.cur.Store(r)
		defer rs.cur.CompareAndSwap(r, nil)
	}
	start := time.Now()
	form := url.Values{"title": {title}, "message": {bellloadMessage}, "type": {"General"}, "to": {recipient}}
	rctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, base+"/send", strings.NewReader(form.Encode()))
	if err != nil {
		return delivery{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// A Bearer request carries no cookie, so the bell asks no Origin of it.
	req.Header.Set("Authorization", "Bearer "+sender)
	resp, err := client.Do(req)
	if err != nil {
		return delivery{}, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return delivery{}, fmt.Errorf("POST /send: %s: %s", resp.Status, body)
	}
	if hi == lo {
		return delivery{}, nil
	}
	select {
	case <-r.done:
	case <-rctx.Done():
		return delivery{}, fmt.Errorf("%d of %d streams received %q within %s", int64(hi-lo)-r.left.Load(), hi-lo, title, bound)
	}
	if n := r.lost.Load(); n > 0 {
		return delivery{}, fmt.Errorf("%d of %d streams ended before %q reached them", n, hi-lo, title)
	}
	if err := rs.failed(); err != nil {
		return delivery{}, err
	}
	commit := r.commit.Load()
	if commit == 0 {
		return delivery{}, fmt.Errorf("%q arrived without a createdAt bellload could read", title)
	}
	d := delivery{fromCommit: make([]time.Duration, len(r.at)), fromRequest: make([]time.Duration, len(r.at))}
	for i, at := range r.at {
		d.fromCommit[i] = time.Duration(at - commit)
		d.fromRequest[i] = time.Duration(at - start.UnixNano())
	}
	return d, nil
}

// profile fetches the server's heap profile (after a GC) and goroutine
// profile into dir, and prints the runtime's memory figures per stream.
func profile(ctx context.Context, client *http.Client, base, dir string, streams int, out io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	get := func(path, file string) ([]byte, error) {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/"+path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("-profile: %s: %w", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("-profile: %s: %w", path, err)
		}
		return b, os.WriteFile(filepath.Join(dir, file), b, 0o644)
	}
	if _, err := get("heap?gc=1", "heap.pb.gz"); err != nil {
		return err
	}
	if _, err := get("goroutine?debug=1", "goroutine.txt"); err != nil {
		return err
	}
	text, err := get("heap?debug=1", "heap.txt")
	if err != nil {
		return err
	}
	// The runtime.MemStats lines at the end of the text heap profile.
	for line := range strings.SplitSeq(string(text), "\n") {
		for _, name := range []string{"HeapAlloc", "HeapInuse", "StackInuse", "Sys", "NextGC"} {
			if v, ok := strings.CutPrefix(line, "# "+name+" = "); ok {
				n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
				fmt.Fprintf(out, "server %s %.1f MB, %.1f KB per stream\n", name, float64(n)/(1<<20), float64(n)/1024/float64(streams))
			}
		}
	}
	fmt.Fprintf(out, "profiles in %s (go tool pprof -top -sample_index=inuse_space %s)\n", dir, filepath.Join(dir, "heap.pb.gz"))
	return nil
}

// cpuOf returns the CPU time (user and system) process pid has used, from
// /proc: the server's cost of a phase whatever else the machine runs.
func cpuOf(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("reading the server's CPU time (Linux /proc): %w", err)
	}
	// The fields after the command name, which is in parentheses.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, errors.New("no CPU times in /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const ticks = 100 // USER_HZ: clock ticks per second on Linux
	return time.Duration(utime+stime) * time.Second / ticks, nil
}

// switchesOf returns how many times the threads of process pid have been
// switched out (voluntary: a sleep, such as a wait for epoll or a futex;
// and not), from /proc: what a phase costs in wake-ups.
func switchesOf(pid int) (int64, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("reading the threads of process %d (Linux /proc): %w", pid, err)
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "status"))
		if err != nil {
			continue // the thread ended meanwhile
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if _, rest, ok := strings.Cut(line, "ctxt_switches:"); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("/proc status of a thread of %d: %w", pid, err)
				}
				sum += n
			}
		}
	}
	return sum, nil
}

// rssOf returns the resident memory of process pid, from /proc.
func rssOf(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("reading the server's RSS (Linux /proc): %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
