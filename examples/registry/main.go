// Command registry runs the meshrx plugin registry with demo packages.
//
//	go run ./examples/registry [-addr 127.0.0.1:8080] [-metrics-addr 127.0.0.1:9090] [-data DIR] [-volume s3://BUCKET/PREFIX?endpoint=URL&region=R] [-pg URL] [-publish-token TOKEN]
//	                           [-public-url https://registry.example.com] [-max-conns 1024] [-rotate-demo-key]
//
// It keeps the mesh in process (memstore) unless -pg names a PostgreSQL
// database, in which case several processes on one database and one -data
// directory are replicas. The module volume is a temporary directory,
// removed on exit, unless -data names one; on the embedded store that
// directory is one process's, and a second start on it is refused, and it
// keeps the mesh as well (mesh.jsonl: each write appended and synced before
// it is answered, replayed at start), so a restart keeps the instances,
// their keys and the packages' tiers. At start it lands three small
// demo bundles with plan tiers, registers a demo instance granted
// Plugins/*, and prints what a consumer needs. The demo instance's key is
// issued once per database and kept in the data directory
// (demo-instance-key, mode 0600): a restart, or another replica on the same
// database and directory, prints the same key; -rotate-demo-key issues a
// new one and revokes the old.
//
// -volume s3://bucket/prefix?endpoint=…&region=… puts the module volume on
// S3-compatible object storage instead (landing.OpenS3Volume; credentials
// from the standard AWS environment variables and files): replicas on
// separate machines then share nothing but the database and the bucket,
// and the demo key is kept on the volume (demo/instance-key); -data then
// keeps only the embedded store's mesh (and its store id). Without -pg
// the embedded store is this process's alone, so it claims the bucket and
// prefix at start (a leased claim object, see claimVolume): a second such
// registry there is refused with a *VolumeClaimedError naming the holder.
// One that loses its claim while it runs (taken over, or not renewed in
// time) writes nothing more there and exits with a *ClaimLostError.
//
//	publish token: …
//	demo instance key: mwi_…
//	listening on http://127.0.0.1:8080
//	metrics on http://127.0.0.1:9090/metrics
//
// /metrics is served on its own listener (-metrics-addr, loopback by
// default; "" turns it off), never on the public one: its per-route stage
// timings would help tell apart answers that are otherwise identical.
//
// Try it:
//
//	curl -i -H "Authorization: Bearer mwi_…" http://127.0.0.1:8080/api/plugins/bundles/index.json
//	curl -i http://127.0.0.1:8080/readyz
//
// SIGINT or SIGTERM shuts it down, waiting a bounded time for requests in
// flight.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/internal/gcsetting"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// demoKeyFile is the file in the data directory that keeps the demo
// instance's key (mode 0600), so that every start on the same database
// prints the key that works.
const demoKeyFile = "demo-instance-key"

// demoKeyObject keeps the demo key on an S3 module volume (-volume).
const demoKeyObject = "demo/instance-key"

// Bounds of the process's own waits.
const (
	startBudget    = 60 * time.Second // opening the store and landing the demo
	shutdownBudget = 15 * time.Second // requests in flight, then the store
)

// HTTP server timeouts. A download's status line is bounded by
// registry.DownloadBudget; its bytes must fit in WriteTimeout as well.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = registry.DownloadBudget + 30*time.Second // a publication's upload
	writeTimeout      = 2 * registry.DownloadBudget
	idleTimeout       = 2 * time.Minute
	// maxHeaderBytes bounds a request's headers (a 431 beyond): a client
	// needs a few KiB, and net/http's default of 1 MiB per connection,
	// times the connection cap, is memory an attacker holds for nothing.
	maxHeaderBytes = 64 << 10
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, hooks{}); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
}

// hooks let a test reach into a run without changing what it does.
type hooks struct {
	// metricsDefault, if set, stands for -metrics-addr's default (a test
	// cannot count on 127.0.0.1:9090 being free on a shared machine).
	metricsDefault string
	// clock, if set, times the volume claim's lease (claimVolume).
	clock clock.Clock
}

// defaultMetricsAddr is -metrics-addr's default.
const defaultMetricsAddr = "127.0.0.1:9090"

// config is what the flags say.
type config struct {
	addr         string
	metricsAddr  string
	data         string
	volume       string
	pg           string
	publishToken string
	publicURL    string
	maxConns     int
	rotateKey    bool
	gc           gcsetting.Setting
}

func parseFlags(args []string, stderr io.Writer, h hooks) (config, error) {
	fs := flag.NewFlagSet("registry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "address to listen on (host:port; :0 picks a free port)")
	metricsDefault := cmp.Or(h.metricsDefault, defaultMetricsAddr)
	fs.StringVar(&c.metricsAddr, "metrics-addr", metricsDefault, "address to serve /metrics on, kept off the public listener (\"\" turns it off; each process on a machine needs its own)")
	fs.StringVar(&c.data, "data", "", "module volume directory (default: a temporary directory removed on exit); with -volume, it keeps only the embedded store's mesh")
	fs.StringVar(&c.volume, "volume", "", "module volume on S3-compatible object storage: s3://bucket/prefix?endpoint=URL&region=REGION (default: the -data directory)")
	fs.StringVar(&c.pg, "pg", "", "PostgreSQL URL for the mesh (default: in-process memstore)")
	fs.StringVar(&c.publishToken, "publish-token", "", "bearer token that authorises publishing (default: a random token, printed)")
	fs.StringVar(&c.publicURL, "public-url", "", "absolute URL the registry is reached at; bundle URLs in the index start with it (default: relative URLs)")
	fs.IntVar(&c.maxConns, "max-conns", registry.DefaultMaxConnections, "connections served at once; more wait in the kernel's backlog")
	fs.BoolVar(&c.rotateKey, "rotate-demo-key", false, "issue a new demo instance key, revoking the one kept in the data directory")
	c.gc.Register(fs)
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.volume != "" && !strings.HasPrefix(c.volume, "s3://") {
		return config{}, fmt.Errorf("-volume %q: want s3://bucket/prefix?endpoint=…&region=…", c.volume)
	}
	if c.maxConns <= 0 {
		return config{}, fmt.Errorf("-max-conns %d: must be positive", c.maxConns)
	}
	if err := c.gc.Validate(); err != nil {
		return config{}, err
	}
	return c, nil
}

// run serves the registry until ctx ends, then shuts down within
// shutdownBudget.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, h hooks) (err error) {
	cfg, err := parseFlags(args, stderr, h)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	defer cfg.gc.Apply()()

	dataDir := cfg.data
	if cfg.volume != "" && dataDir == "" {
		// Nothing is local.
	} else if dataDir == "" {
		if dataDir, err = os.MkdirTemp("", "meshrx-registry-"); err != nil {
			return fmt.Errorf("creating the data directory: %w", err)
		}
		defer func() { err = errors.Join(err, os.RemoveAll(dataDir)) }()
	} else if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("creating the data directory (-data): %w", err)
	}
	if cfg.data != "" && cfg.pg == "" {
		// Processes on one database share a directory as replicas; on
		// the embedded store each has a mesh of its own.
		unlock, lockErr := lockData(dataDir)
		if lockErr != nil {
			return lockErr
		}
		defer func() { err = errors.Join(err, unlock()) }()
	}
	token := cfg.publishToken
	if token == "" {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("generating a publish token: %w", err)
		}
		token = hex.EncodeToString(b[:])
	}

	startCtx, cancelStart := context.WithTimeout(ctx, startBudget)
	defer cancelStart()
	keepDir := "" // the embedded store keeps its nodes where the modules are kept
	if cfg.data != "" {
		keepDir = dataDir
	}
	store, feed, closeStore, err := openMesh(startCtx, cfg.pg, keepDir, logger)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeStore()) }()

	var volume landing.Volume
	var keeper keyKeeper
	var claim *volumeClaim // held on the embedded store with -volume
	if cfg.volume != "" {
		if cfg.pg == "" && cfg.data == "" {
			logger.Warn("registry: -volume without -pg: the embedded store keeps nothing across a restart, so the next start issues a new demo key and serves the bundles published now to nobody; give -pg, or -data to keep the mesh in a directory")
		}
		s3v, err := s3volume.Open(startCtx, cfg.volume, s3volume.Options{})
		if err != nil {
			return fmt.Errorf("-volume: %w", err)
		}
		volume = s3v
		if cfg.pg == "" {
			// The embedded store is this process's alone: claim the
			// bucket and prefix for it (see claimVolume), and use the
			// volume through the claim, which refuses every call once
			// the claim is lost.
			id, err := storeID(keepDir)
			if err != nil {
				_ = s3v.Close()
				return err
			}
			// The address as given until the registry listens; then
			// the bound one (see announce below).
			if claim, err = claimVolume(startCtx, s3v, cmp.Or[clock.Clock](h.clock, clock.New()), id, holderName(cfg.addr), logger); err != nil {
				_ = s3v.Close()
				return err
			}
			volume = claim.volume()
		}
		keeper = volumeKey{v: volume, name: demoKeyObject}
	} else {
		volume, keeper = landing.DirVolume(dataDir), keyFile(filepath.Join(dataDir, demoKeyFile))
	}
	if c, ok := volume.(io.Closer); ok { // it keeps the root open, or connections
		defer func() { err = errors.Join(err, c.Close()) }()
	}
	if claim != nil { // released before the volume closes
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
			defer cancel()
			err = errors.Join(err, claim.release(sctx))
		}()
	}
	landing, err := landing.NewModuleLanding(volume, landing.Options{Logger: logger})
	if err != nil {
		return err
	}
	served := registry.NewServedActivation(landing, registry.ServedOptions{Logger: logger, Changes: store})
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
		defer cancel()
		err = errors.Join(err, served.Close(sctx), landing.Shutdown(sctx))
	}()

	key, err := setUpDemo(startCtx, store, landing, served, keeper, cfg.rotateKey)
	if err != nil {
		return fmt.Errorf("setting up the demo: %w", err)
	}

	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv, err := registry.NewServer(registry.ServerOptions{
		Served:       served,
		Auth:         &auth.Authenticator{Mesh: store, Ladder: &auth.PlanTierLadder{Mesh: store, Logger: logger}, Logger: logger},
		Mesh:         store,
		Feed:         feed,
		PublishToken: token,
		Logger:       logger,
		Metrics:      metrics,
		Version:      "meshrx-registry-example",
		PublicURL:    cfg.publicURL,
	})
	if ce := (*registry.ConfigError)(nil); errors.As(err, &ce) && ce.Setting == "ServerOptions.PublicURL" {
		return fmt.Errorf("-public-url: %w", err)
	}
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
		defer cancel()
		err = errors.Join(err, srv.Close(sctx))
	}()

	httpSrv := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listening on %s (-addr): %w", cfg.addr, err)
	}
	if claim != nil {
		// The claim names the address bound (-addr :0 picks the port).
		if err := claim.announce(startCtx, holderName(ln.Addr().String())); err != nil {
			if lost := (*ClaimLostError)(nil); errors.As(err, &lost) {
				_ = ln.Close()
				return err
			}
			logger.Warn("registry: recording the listening address in the volume's claim failed; the next renewal records it", slog.Any("err", err))
		}
	}
	ln = registry.LimitConnections(httpSrv, ln, cfg.maxConns) // an idle keep-alive connection never holds a slot a new client needs
	metricsSrv, metricsLn, err := listenMetrics(cfg.metricsAddr, srv.MetricsHandler(), logger)
	if err != nil {
		_ = ln.Close()
		return err
	}
	if cfg.volume != "" {
		fmt.Fprintf(stdout, "module volume: %s\n", volume)
	} else {
		fmt.Fprintf(stdout, "data directory: %s\n", dataDir)
	}
	fmt.Fprintf(stdout, "publish token: %s\n", token)
	fmt.Fprintf(stdout, "demo instance key: %s\n", key)
	if metricsLn != nil {
		fmt.Fprintf(stdout, "metrics on http://%s%s\n", metricsLn.Addr(), registry.MetricsPath)
	}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())

	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(ln) }()
	metricsErr := make(chan error, 1)
	if metricsLn != nil {
		go func() { metricsErr <- metricsSrv.Serve(metricsLn) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
			defer cancel()
			if err := metricsSrv.Shutdown(sctx); err != nil {
				_ = metricsSrv.Close()
			}
			<-metricsErr // bounded: Serve returns once the server is shut down or closed
		}()
	}
	var claimLost <-chan struct{} // nil (never) without a claim
	if claim != nil {
		claimLost = claim.lost.Done()
	}
	var stopped error // why it stops, when not asked to
	select {
	case err := <-serveErr:
		return fmt.Errorf("serving: %w", err)
	case err := <-metricsErr:
		_ = httpSrv.Close()
		<-serveErr
		metricsErr <- err // for the deferred shutdown's receive
		return fmt.Errorf("serving metrics: %w", err)
	case <-claimLost:
		// Another registry may hold the volume now: nothing is written
		// there any more (the volume refuses every call), and the
		// process stops so that its supervisor restarts it.
		stopped = claim.err()
	case <-ctx.Done():
	}
	logger.Info("registry: shutting down", slog.Duration("budget", shutdownBudget))
	sctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
	defer cancel()
	if err := httpSrv.Shutdown(sctx); err != nil {
		// Requests still running past the budget are cut off.
		_ = httpSrv.Close()
		<-serveErr
		return errors.Join(stopped, fmt.Errorf("shutting down the HTTP server within %s: %w", shutdownBudget, err))
	}
	<-serveErr // Serve has returned http.ErrServerClosed
	return stopped
}

// holderName is how a volume's claim names this registry: its host name
// and the address it listens on.
func holderName(addr string) string {
	host, _ := os.Hostname()
	return host + " " + addr
}

// listenMetrics listens on addr for /metrics; an empty addr serves none.
func listenMetrics(addr string, h http.Handler, logger *slog.Logger) (*http.Server, net.Listener, error) {
	if addr == "" {
		return nil, nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, nil, fmt.Errorf("listening for metrics on %s: %w: another process (another replica on this machine?) serves its metrics there; give this one its own with -metrics-addr, e.g. -metrics-addr 127.0.0.1:9091 (or -metrics-addr \"\" for none)", addr, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("listening for metrics on %s (-metrics-addr): %w", addr, err)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readHeaderTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}, ln, nil
}

// openMesh opens the store -pg names, or an in-process one (kept in
// keepDir's mesh.jsonl when keepDir is set: see keptStore), and the state
// of its change feed (nil for memstore, whose feed does not drop). Both
// gate the authentication's node types (auth.DecisionTypes) beside the
// access fold's: a write to a key, an instance or a grant then moves the
// store's security version, so the authenticator answers a key's warm
// requests from the decision it kept at that version.
func openMesh(ctx context.Context, pgURL, keepDir string, logger *slog.Logger) (mesh.Store, rx.Observable[error], func() error, error) {
	gated := append(auth.SecurityTypes(), auth.DecisionTypes()...)
	if pgURL == "" && keepDir != "" {
		s, err := openKeptStore(ctx, keepDir, memstore.Options{Logger: logger, GatedTypes: gated}, logger)
		if err != nil {
			return nil, nil, nil, err
		}
		return s, nil, s.Close, nil
	}
	if pgURL == "" {
		s, err := memstore.New(memstore.Options{Logger: logger, GatedTypes: gated})
		if err != nil {
			return nil, nil, nil, err
		}
		return s, nil, s.Close, nil
	}
	s, err := pgstore.Open(ctx, pgURL, pgstore.Options{Logger: logger, GatedTypes: gated})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("opening the PostgreSQL mesh (-pg): %w", err)
	}
	return s, s.FeedDown(), s.Close, nil
}
