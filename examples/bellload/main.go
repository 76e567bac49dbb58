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
// open and idle; one notification sent to one viewer (POST /send), from the
// request to the "bell" event carrying it; and an Admin notification (to
// Admin, which only a global admin may send), from the request to the
// event on every admin stream. It ends with
//
//	summary: viewers=N admins=M rss_mb=X deliver_p50_ms=X deliver_p99_ms=X broadcast_p99_ms=X
//
// Every wait is bounded (-bound); the run stops the server when it ends.
// Each stream holds a file descriptor on both sides: raise ulimit -n above
// viewers+admins first.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

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
	if c.viewers < 1 || c.sends < 1 || c.admins < 0 || c.broadcasts < 0 || c.dial < 1 || c.bound <= 0 {
		return errors.New("-viewers, -sends, -dial and -bound must be positive; -admins and -broadcasts not negative")
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
	for _, s := range streams {
		if s.token == "" {
			return fmt.Errorf("the bell's tokens file has no token for %s", s.viewer)
		}
	}
	sender := srv.tokens[senderName]
	if sender == "" {
		return fmt.Errorf("the bell's tokens file has no token for the sender %s", senderName)
	}
	streamCtx, endStreams := context.WithCancel(ctx)
	var reading sync.WaitGroup
	defer func() {
		endStreams()
		reading.Wait() // each ends as its request's context does
	}()
	began := time.Now()
	if err := openAll(streamCtx, &reading, client, srv.base, streams, c); err != nil {
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
	deliver := make([]time.Duration, 0, c.sends)
	for i := range c.sends {
		s := streams[rng.IntN(c.viewers)]
		d, err := timeDelivery(ctx, client, srv.base, sender, fmt.Sprintf("load-%d", i), s.viewer, []*stream{s}, c.bound)
		if err != nil {
			return fmt.Errorf("send %d to %s: %w", i, s.viewer, err)
		}
		deliver = append(deliver, d...)
	}
	admins := streams[c.viewers:]
	var broadcast []time.Duration
	cpuBefore, err := cpuOf(srv.cmd.Process.Pid)
	if err != nil {
		return err
	}
	ownBefore, err := cpuOf(os.Getpid())
	if err != nil {
		return err
	}
	for i := range c.broadcasts {
		if len(admins) == 0 {
			break
		}
		d, err := timeDelivery(ctx, client, srv.base, sender, fmt.Sprintf("broadcast-%d", i), adminAddressee, admins, c.bound)
		if err != nil {
			return fmt.Errorf("broadcast %d: %w", i, err)
		}
		broadcast = append(broadcast, d...)
	}
	if c.broadcasts > 0 && len(admins) > 0 {
		cpuAfter, err := cpuOf(srv.cmd.Process.Pid)
		if err != nil {
			return err
		}
		ownAfter, err := cpuOf(os.Getpid())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "server CPU %.1f ms, bellload's own %.1f ms, per broadcast to %d admin streams\n",
			ms(cpuAfter-cpuBefore)/float64(c.broadcasts), ms(ownAfter-ownBefore)/float64(c.broadcasts), len(admins))
	}
	fmt.Fprintf(out, "summary: viewers=%d admins=%d rss_mb=%.1f deliver_p50_ms=%.2f deliver_p99_ms=%.2f broadcast_p99_ms=%.2f\n",
		c.viewers, c.admins, float64(rss)/(1<<20), ms(quantile.Of(deliver, 0.50)), ms(quantile.Of(deliver, 0.99)), ms(quantile.Of(broadcast, 0.99)))
	return nil
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
	return &stream{viewer: viewer, token: b.tokens[viewer]}
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
	if c.profile != "" {
		cmd.Args = append(cmd.Args, "-pprof", "127.0.0.1:0")
	}
	cmd.Stderr = io.Discard // the server logs each stream; not what is measured
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
	go func() {
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
	case <-timer.C:
		b.stop()
		return nil, fmt.Errorf("the bell did not say where it listens within %s", c.bound)
	case <-ctx.Done():
		b.stop()
		return nil, ctx.Err()
	}
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

// stream is one viewer's open event stream.
type stream struct {
	viewer string
	token  string // the viewer's, sent as Authorization: Bearer

	mu      sync.Mutex
	want    string        // a title awaited on this stream
	sentAt  time.Time     // when the awaited notification was sent
	arrived chan<- result // told when it arrives
}

type result struct {
	s *stream
	d time.Duration
}

// expect arms s for title, sent at, reporting to c.
func (s *stream) expect(title string, at time.Time, c chan<- result) {
	s.mu.Lock()
	s.want, s.sentAt, s.arrived = title, at, c
	s.mu.Unlock()
}

// seen checks one event's data for the awaited title.
func (s *stream) seen(data []byte, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.want == "" || !bytes.Contains(data, []byte(`"`+s.want+`"`)) {
		return
	}
	s.arrived <- result{s, at.Sub(s.sentAt)}
	s.want = ""
}

// openAll opens every stream, c.dial at a time, and returns once each has
// received its first bell state, or fails naming the first that did not.
// The streams are read until ctx ends.
func openAll(ctx context.Context, reading *sync.WaitGroup, client *http.Client, base string, streams []*stream, c config) error {
	ready := make(chan error, len(streams))
	slots := make(chan struct{}, c.dial)
	timer := time.NewTimer(c.bound)
	defer timer.Stop()
	for _, s := range streams {
		select {
		case slots <- struct{}{}:
		case <-timer.C:
			return fmt.Errorf("the streams did not all open within %s", c.bound)
		}
		reading.Add(1)
		go func() {
			defer reading.Done()
			s.run(ctx, client, base, func(err error) {
				<-slots
				ready <- err
			})
		}()
	}
	for range streams {
		select {
		case err := <-ready:
			if err != nil {
				return err
			}
		case <-timer.C:
			return fmt.Errorf("the streams did not all open within %s", c.bound)
		}
	}
	return nil
}

// run opens s and reads its events until ctx ends (the request's context:
// its end closes the body). opened is called once: with nil when the first
// bell state arrived, or with the error that came first.
func (s *stream) run(ctx context.Context, client *http.Client, base string, opened func(error)) {
	fail := func(err error) { opened(fmt.Errorf("stream of %s: %w", s.viewer, err)) }
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events?viewer="+url.QueryEscape(s.viewer), nil)
	if err != nil {
		fail(err)
		return
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		fail(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fail(fmt.Errorf("status %s", resp.Status))
		return
	}
	r := bufio.NewReaderSize(resp.Body, 4096)
	first := true
	var event string
	var data, long []byte
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer (a bell of many
			// notifications): gather it, rather than end the stream.
			long = append(long, line...)
			continue
		}
		if err == nil && len(long) > 0 {
			long = append(long, line...)
			line, long = long, long[:0]
		}
		if err != nil {
			if first {
				fail(err)
			}
			return // the run ended
		}
		at := time.Now()
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0: // the end of one event
			if event == "bell" {
				if first {
					first = false
					opened(nil)
				} else {
					s.seen(data, at)
				}
			}
			event, data = "", data[:0]
		case bytes.HasPrefix(line, []byte("event: ")):
			event = string(line[len("event: "):])
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data, line[len("data: "):]...)
		}
	}
}

// timeDelivery sends one notification titled title to recipient (a user,
// or Admin) as the user of the token sender, and returns, for each stream
// in on, the time from the request to the event carrying it.
func timeDelivery(ctx context.Context, client *http.Client, base, sender, title, recipient string, on []*stream, bound time.Duration) ([]time.Duration, error) {
	arrived := make(chan result, len(on))
	start := time.Now()
	for _, s := range on {
		s.expect(title, start, arrived)
	}
	form := url.Values{"title": {title}, "message": {"bellload"}, "type": {"General"}, "to": {recipient}}
	rctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, base+"/send", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// A Bearer request carries no cookie, so the bell asks no Origin of it.
	req.Header.Set("Authorization", "Bearer "+sender)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST /send: %s: %s", resp.Status, body)
	}
	out := make([]time.Duration, 0, len(on))
	for range on {
		select {
		case r := <-arrived:
			out = append(out, r.d)
		case <-rctx.Done():
			return nil, fmt.Errorf("%d of %d streams received %q within %s", len(out), len(on), title, bound)
		}
	}
	return out, nil
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
