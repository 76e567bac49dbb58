package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/landing"
)

// childEnv names the environment variable that makes this program (or its
// test binary, see TestMain) run as one replica: its value is the
// replica's childConfig as JSON.
const childEnv = "MESHRX_FAULTS_REPLICA"

// childConfig is what a replica process is told.
type childConfig struct {
	Name, PGURL, Data, Addr, Token string
	Control                        string        // directory of control files
	Freshness                      time.Duration // ServedOptions.Freshness
	ClockSkew                      time.Duration // added to the landing's clock
	Verbose                        bool
	NoJournal                      bool   // ServedOptions.JournalPeriod = registry.NoJournal
	Volume                         string // the module volume on object storage (s3://…); "": Data
}

// Control files a replica polls (every controlPoll), set by the schedule:
const (
	controlSlow    = "slow"              // content: a delay per volume operation
	controlSilent  = "silent"            // announcements on the change feed fail
	controlCrash   = "crash-on-announce" // the next announcement kills the process first
	controlPoll    = 50 * time.Millisecond
	childShutdown  = 10 * time.Second
	childStartWait = 60 * time.Second
)

// runChild runs one replica as examples/registry serves it — one pgstore,
// a landing on the shared volume, a ServedActivation with the change feed
// and the journal's tail (the defaults), the registry's server — until
// SIGTERM, or until stdin ends. It prints "listening on ADDR" once it
// serves.
func runChild(config string, stdin io.Reader, stdout, stderr io.Writer) error {
	var cc childConfig
	if err := json.Unmarshal([]byte(config), &cc); err != nil {
		return fmt.Errorf("%s: %w", childEnv, err)
	}
	level := slog.LevelError
	if cc.Verbose {
		level = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("replica", cc.Name)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// The run holds our stdin open; its end means the run is gone (killed,
	// or dead of a panic) without stopping us: shut down rather than serve
	// on, parented to init.
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		stop()
	}()
	startCtx, cancel := context.WithTimeout(ctx, childStartWait)
	defer cancel()

	store, err := pgstore.Open(startCtx, cc.PGURL, pgstore.Options{Logger: logger, MaxConns: 8})
	if err != nil {
		return err
	}
	defer store.Close()
	var inner landing.Volume = landing.DirVolume(cc.Data)
	if cc.Volume != "" {
		s3v, err := s3volume.Open(startCtx, cc.Volume, s3volume.Options{})
		if err != nil {
			return err
		}
		defer s3v.Close()
		inner = s3v
	}
	volume := &slowableVolume{v: inner}
	ctl := &controls{dir: cc.Control, volume: volume, logger: logger}
	go ctl.watch(ctx)
	var clk clock.Clock = clock.New()
	if cc.ClockSkew != 0 {
		clk = skewedClock{Clock: clk, by: cc.ClockSkew}
	}
	lane, err := landing.NewModuleLanding(volume.exclusiveAsInner(), landing.Options{Logger: logger, Replica: cc.Name, Clock: clk})
	if err != nil {
		return err
	}
	opts := registry.ServedOptions{Freshness: cc.Freshness, Logger: logger, Changes: &controlledChanges{Store: store, ctl: ctl}}
	if cc.NoJournal {
		opts.JournalPeriod = registry.NoJournal
	}
	served := registry.NewServedActivation(lane, opts)
	srv, err := registry.NewServer(registry.ServerOptions{
		Served:       served,
		Auth:         &auth.Authenticator{Mesh: store, Ladder: &auth.PlanTierLadder{Mesh: store, Logger: logger}, Logger: logger},
		Mesh:         store,
		Feed:         store.FeedDown(),
		PublishToken: cc.Token,
		Logger:       logger,
		Metrics:      prometheus.NewRegistry(),
		Version:      "meshrx-faults-" + cc.Name,
	})
	if err != nil {
		return err
	}
	ln, err := listen(startCtx, cc.Addr)
	if err != nil {
		return err
	}
	httpSrv := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       registry.DownloadBudget + 30*time.Second,
		WriteTimeout:      2 * registry.DownloadBudget,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	select {
	case err = <-serveErr:
	case <-ctx.Done():
	}
	sctx, cancelShutdown := context.WithTimeout(context.Background(), childShutdown)
	defer cancelShutdown()
	return errors.Join(err, httpSrv.Shutdown(sctx), srv.Close(sctx), served.Close(sctx), lane.Shutdown(sctx))
}

// skewedClock is a clock whose Now is off by a fixed offset: a replica
// whose host's clock is wrong.
type skewedClock struct {
	clock.Clock
	by time.Duration
}

func (c skewedClock) Now() time.Time { return c.Clock.Now().Add(c.by) }

// controls is what the control files say, as last polled.
type controls struct {
	dir    string
	volume *slowableVolume
	logger *slog.Logger
}

func (c *controls) has(name string) bool {
	_, err := os.Stat(filepath.Join(c.dir, name))
	return err == nil
}

// watch applies the slow-volume control until ctx ends.
func (c *controls) watch(ctx context.Context) {
	t := time.NewTicker(controlPoll)
	defer t.Stop()
	for {
		var d time.Duration
		if data, err := os.ReadFile(filepath.Join(c.dir, controlSlow)); err == nil {
			d, _ = time.ParseDuration(strings.TrimSpace(string(data)))
		}
		c.volume.setDelay(d)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// controlledChanges is the replica's mesh as its change feed sees it: a
// change node put while "silent" fails (an announcement the database
// refuses), and while "crash-on-announce" the process dies first — after
// the write's commit, before its announcement.
type controlledChanges struct {
	mesh.Store
	ctl *controls
}

func (c *controlledChanges) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	if strings.HasPrefix(n.Path, registry.DefaultChangesNamespace+"/") {
		if c.ctl.has(controlCrash) {
			_ = os.Remove(filepath.Join(c.ctl.dir, controlCrash))
			killSelf()
			select {} // the signal is on its way
		}
		if c.ctl.has(controlSilent) {
			return mesh.Node{}, errors.New("faults: announcements are failing (control file silent)")
		}
	}
	return c.Store.Put(ctx, n)
}
