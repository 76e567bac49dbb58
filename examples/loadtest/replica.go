package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// moduleName names the i-th generated module.
func moduleName(i int) string { return fmt.Sprintf("Load.Module%04d", i) }

// landModules lands n one-file modules into dir on the local disk: the
// setup, kept off the slow volume so that it does not take n × files ×
// latency.
func landModules(ctx context.Context, dir string, n int, logger *slog.Logger) error {
	l, err := landing.NewModuleLanding(landing.DirVolume(dir), landing.Options{Logger: logger, Replica: "setup"})
	if err != nil {
		return err
	}
	defer l.Close()
	for i := range n {
		name := moduleName(i)
		archive, err := tinyBundle(name)
		if err != nil {
			return err
		}
		if _, err := l.Land(ctx, name, "1.0.0", archive); err != nil {
			return fmt.Errorf("landing %s: %w", name, err)
		}
	}
	return nil
}

func tinyBundle(name string) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("manifest.json")
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(w, `{"plugin":%q}`, name); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// scanCounter counts the scans started on a volume: a scan of the module
// records begins by listing the volume's top-level modules directory.
type scanCounter struct {
	landing.Volume
	top   map[string]bool // the top-level directories the setup created
	scans atomic.Int64
}

func newScanCounter(v landing.Volume, dir string) (*scanCounter, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	top := map[string]bool{}
	for _, e := range entries {
		// The journal's listing (a replica's first tail) is not a scan.
		if e.IsDir() && e.Name() != "journal" {
			top[e.Name()] = true
		}
	}
	return &scanCounter{Volume: v, top: top}, nil
}

func (c *scanCounter) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if c.top[name] {
		c.scans.Add(1)
	}
	return c.Volume.ReadDir(ctx, name)
}

// replica is one registry process, in process: its own mesh (or a shared
// one), its own landing on the slow volume, its own HTTP server on a free
// port.
type replica struct {
	url    string // the index URL
	base   string // the registry's URL, without a path
	token  string // the publish token
	key    string
	lander *landing.ModuleLanding
	served *registry.ServedActivation
	scans  *scanCounter
	close  func(ctx context.Context) error

	readyIn       time.Duration // the first derivation (served mode)
	snapshotBytes int64         // heap held by the first snapshot
	heapAtServer  int64         // live heap before the server (and its catalog) started
}

// derivations is how many scans of the module records the replica started:
// the served snapshot's derivations, or the baseline's per-request scans.
func (r *replica) derivations() int64 { return r.scans.scans.Load() }

// replicaOptions configures startReplica.
type replicaOptions struct {
	dir              string
	volume           landing.Volume // an S3 copy of dir; nil: dir behind the simulated latency
	modules          int
	latency          time.Duration
	scan             bool       // the scan-per-request baseline
	readPool         int        // the landing's read pool
	store            mesh.Store // a shared mesh (-pg); nil: a memstore of its own
	register         bool       // write the plan ladder, package nodes and consumer (once per mesh)
	key              string     // the consumer's key when register is false
	feed             bool       // announce and absorb writes through the mesh's change feed
	journal          bool       // tail the volume's journal
	freshness        time.Duration
	derivationBudget time.Duration
	token            string // the publish token ("": the publish route is not mapped)
	name             string
}

// heapInUse returns the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// startReplica starts a registry over the modules in dir, each volume
// operation delayed by latency. The served replica's snapshot is derived
// once before it answers, as a registry at steady state has one.
func startReplica(ctx context.Context, o replicaOptions, logger *slog.Logger) (_ *replica, err error) {
	var closers []func(ctx context.Context) error
	closeAll := func(ctx context.Context) error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i](ctx))
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
			defer cancel()
			err = errors.Join(err, closeAll(sctx))
		}
	}()

	store := o.store
	if store == nil {
		// Gating the authentication's node types, as examples/registry
		// does: a warm poll is answered from the key's kept decision.
		mem, err := memstore.New(memstore.Options{Logger: logger, GatedTypes: auth.DecisionTypes()})
		if err != nil {
			return nil, err
		}
		closers = append(closers, func(context.Context) error { return mem.Close() })
		store = mem
	}
	key := o.key
	if o.register {
		if key, err = registerConsumer(ctx, store, o.modules); err != nil {
			return nil, err
		}
	}

	inner := o.volume
	if inner == nil {
		inner = newSlowVolume(landing.DirVolume(o.dir), o.latency)
	}
	counter, err := newScanCounter(inner, o.dir)
	if err != nil {
		return nil, err
	}
	lander, err := landing.NewModuleLanding(keepExclusive(counter, inner), landing.Options{Logger: logger, ReadPool: o.readPool, Replica: o.name})
	if err != nil {
		return nil, err
	}
	closers = append(closers, lander.Shutdown)
	opts := registry.ServedOptions{Logger: logger, Freshness: o.freshness, DerivationBudget: o.derivationBudget}
	if o.feed {
		opts.Changes = store
	}
	if !o.journal {
		opts.JournalPeriod = registry.NoJournal
	}
	rep := &replica{key: key, lander: lander, scans: counter}
	before := heapInUse()
	served := registry.NewServedActivation(lander, opts)
	closers = append(closers, served.Close)
	if !o.scan {
		began := time.Now()
		if _, err := rx.First(ctx, served.Read()); err != nil {
			return nil, fmt.Errorf("deriving the first snapshot: %w", err)
		}
		rep.readyIn = time.Since(began)
		rep.snapshotBytes = heapInUse() - before
	}

	rep.heapAtServer = heapInUse()
	srv, err := registry.NewServer(registry.ServerOptions{
		Served:       served,
		Auth:         &auth.Authenticator{Mesh: store, Ladder: &auth.PlanTierLadder{Mesh: store, Logger: logger}, Logger: logger},
		Mesh:         store,
		Logger:       logger,
		Metrics:      prometheus.NewRegistry(),
		PublishToken: o.token,
	})
	if err != nil {
		return nil, err
	}
	closers = append(closers, srv.Close)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	handler := srv.Handler()
	if o.scan {
		handler = scanEveryRequest(lander, handler)
	}
	httpSrv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      2 * registry.DownloadBudget,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(ln) }()
	closers = append(closers, func(ctx context.Context) error {
		err := httpSrv.Shutdown(ctx)
		if err != nil {
			_ = httpSrv.Close()
		}
		<-serveErr
		return err
	})
	rep.base = "http://" + ln.Addr().String()
	rep.url = rep.base + client.IndexPath
	rep.token = o.token
	rep.served = served
	rep.close = closeAll
	return rep, nil
}

// registerConsumer writes the plan ladder, a package node per module and
// a consumer instance on the pro plan granted Plugins/*, and returns its key.
func registerConsumer(ctx context.Context, store mesh.Store, modules int) (string, error) {
	reg := &auth.Instances{Mesh: store}
	for _, t := range []auth.PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 1}} {
		if err := reg.SetPlanTier(ctx, t); err != nil {
			return "", err
		}
	}
	content, err := json.Marshal(registry.PackageContent{Tier: "free"})
	if err != nil {
		return "", err
	}
	for i := range modules {
		n := mesh.Node{Path: registry.DefaultSource + "/" + moduleName(i), NodeType: registry.PackageNodeType, Content: content}
		if _, err := store.Put(ctx, n); err != nil {
			return "", err
		}
	}
	if _, err := reg.Register(ctx, "load", "load test consumer", "pro"); err != nil {
		return "", err
	}
	if _, err := reg.SetGrant(ctx, "load", "examples/loadtest", registry.DefaultSource+"/*"); err != nil {
		return "", err
	}
	return reg.IssueKey(ctx, "load")
}

// scanEveryRequest is the baseline the served snapshot exists to avoid:
// every index request first scans the module records on the volume
// (ModuleLanding.Activation), the cost an index without a snapshot pays per
// request. The registry then answers as usual.
func scanEveryRequest(l *landing.ModuleLanding, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == client.IndexPath {
			if _, err := l.Activation(r.Context()); err != nil {
				answer.SetRetryAfter(w.Header(), 0)
				http.Error(w, "scanning the module records: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
