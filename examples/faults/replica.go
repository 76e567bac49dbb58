package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/landing"
)

// replicaBudget bounds starting a replica (opening its store) and tearing
// one down.
const replicaBudget = 60 * time.Second

// replicaConfig is what every replica shares: one database, one volume.
type replicaConfig struct {
	pgURL     string
	volume    landing.Volume
	freshness time.Duration
	token     string // publish token
	logger    *slog.Logger
}

// replica is one registry process, in process: its own store, landing,
// served snapshot and HTTP server. kill tears it down abruptly and start
// brings it back on the same address.
type replica struct {
	name string
	cfg  replicaConfig

	mu      sync.Mutex
	addr    string // host:port, kept across restarts
	store   *pgstore.Store
	notify  *notifications.Service
	parts   []func(ctx context.Context) error // teardown, in reverse order
	running bool
}

func (r *replica) baseURL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "http://" + r.addr
}

// current returns the running store and notification service, or nil.
func (r *replica) current() (*pgstore.Store, *notifications.Service) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return nil, nil
	}
	return r.store, r.notify
}

// start opens the replica's store, landing, snapshot and server and serves
// on its address (a free port the first time).
func (r *replica) start(ctx context.Context) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, replicaBudget)
	defer cancel()
	var parts []func(ctx context.Context) error
	defer func() {
		if err != nil {
			err = errors.Join(err, teardown(parts))
		}
	}()
	logger := r.cfg.logger.With("replica", r.name)
	store, err := pgstore.Open(ctx, r.cfg.pgURL, pgstore.Options{Logger: logger, MaxConns: 8})
	if err != nil {
		return fmt.Errorf("replica %s: %w", r.name, err)
	}
	parts = append(parts, func(context.Context) error { return store.Close() })
	lander, err := landing.NewModuleLanding(r.cfg.volume, landing.Options{Logger: logger, Replica: r.name})
	if err != nil {
		return err
	}
	parts = append(parts, lander.Shutdown)
	served := registry.NewServedActivation(lander, registry.ServedOptions{Freshness: r.cfg.freshness})
	parts = append(parts, served.Close)
	srv, err := registry.NewServer(registry.ServerOptions{
		Served:       served,
		Auth:         &auth.Authenticator{Mesh: store, Ladder: &auth.PlanTierLadder{Mesh: store, Logger: logger}, Logger: logger},
		Mesh:         store,
		PublishToken: r.cfg.token,
		Logger:       logger,
		Metrics:      prometheus.NewRegistry(),
		Version:      "meshrx-faults-" + r.name,
	})
	if err != nil {
		return err
	}
	parts = append(parts, srv.Close)
	addr := r.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := listen(ctx, addr)
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
	served2 := make(chan error, 1)
	go func() { served2 <- httpSrv.Serve(ln) }()
	// Abrupt on purpose: a killed process does not drain its requests.
	parts = append(parts, func(context.Context) error {
		err := httpSrv.Close()
		<-served2
		return err
	})
	r.addr = ln.Addr().String()
	r.store = store
	r.notify = &notifications.Service{Mesh: store, Retention: 1 << 20, Logger: logger}
	r.parts = parts
	r.running = true
	return nil
}

// listen binds addr, retrying briefly: a port this process just closed can
// take a moment to be free again.
func listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	for {
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err == nil {
			return ln, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("listening on %s: %w", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// kill tears the replica down without draining: connections are cut,
// requests in flight fail, live queries end.
func (r *replica) kill() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return nil
	}
	r.running = false
	return teardown(r.parts)
}

func teardown(parts []func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), replicaBudget)
	defer cancel()
	var errs []error
	for i := len(parts) - 1; i >= 0; i-- {
		errs = append(errs, parts[i](ctx))
	}
	return errors.Join(errs...)
}
