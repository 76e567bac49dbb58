package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/registry"
)

// Budgets of the server's own waits.
const (
	openBudget     = time.Minute      // connecting to and migrating PostgreSQL
	seedBudget     = 30 * time.Second // writing the demo notifications
	shutdownBudget = 10 * time.Second // open requests finishing after a signal
)

// demoAdmin is the demo's global admin: its bell also shows the Admin
// notifications. The other demo users are alice and bob.
const demoAdmin = "ops"

// demoAdmins is the global-admin check of the demo: a fixed set, so every
// answer is determined.
type demoAdmins map[string]bool

func (d demoAdmins) IsGlobalAdmin(_ context.Context, user string) access.Decision {
	if d[mesh.FoldName(user)] {
		return access.Allowed
	}
	return access.Denied
}

// run serves the bell page on cfg.addr until ctx ends, then shuts down.
func run(ctx context.Context, cfg config, stdout io.Writer, logger *slog.Logger) error {
	store, closeStore, err := openStore(ctx, cfg, clock.New(), logger)
	if err != nil {
		return err
	}
	defer closeStore()
	admins := demoAdmins{demoAdmin: true}
	users := slices.Clone(demoUsers)
	genUsers, genAdmins := cfg.load.generated()
	users = append(append(users, genUsers...), genAdmins...)
	for _, a := range genAdmins {
		admins[a] = true
	}
	svc := &notifications.Service{
		Mesh:   store,
		Clock:  clock.New(),
		Admins: admins,
		Logger: logger,
	}
	if err := seed(ctx, svc); err != nil {
		return err
	}
	accts, err := newAccounts(users)
	if err != nil {
		return err
	}
	if cfg.load.tokensFile != "" {
		if err := writeTokens(cfg.load.tokensFile, accts); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	base := "http://" + displayAddr(ln.Addr())
	// The tokens are the only way in: each link signs its user in (a
	// cookie) and is valid until the bell restarts. Programs send the
	// token as Authorization: Bearer.
	// With -tokens the generated users' tokens are in the file only.
	printed := accts.users()
	if cfg.load.tokensFile != "" {
		printed = slices.Clone(demoUsers)
		slices.Sort(printed)
		fmt.Fprintf(stdout, "tokens of all %d users written to %s\n", len(users), cfg.load.tokensFile)
	}
	for _, u := range printed {
		fmt.Fprintf(stdout, "sign in as %s: %s/login?token=%s\n", u, base, accts.tokens[u])
	}
	stopPprof, err := cfg.load.servePprof(stdout, logger)
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer stopPprof()
	fmt.Fprintf(stdout, "listening on %s\n", base)
	h := newServer(svc, accts, logger)
	h.lim = cfg.load.limits(h.lim)
	h.writeEach = cfg.writeEach
	return serve(ctx, ln, h, logger)
}

// displayAddr returns addr as a URL host: a listener on every interface
// (":0" gives [::]:port) is shown as localhost, which a browser can open.
func displayAddr(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	return net.JoinHostPort("localhost", strconv.Itoa(tcp.Port))
}

// openStore opens the store cfg names: PostgreSQL with -pg, the embedded
// store otherwise. The returned func releases it.
func openStore(ctx context.Context, cfg config, clk clock.Clock, logger *slog.Logger) (mesh.Store, func(), error) {
	if cfg.pg == "" {
		s, err := memstore.New(memstore.Options{Clock: clk, Logger: logger, GatedTypes: auth.SecurityTypes()})
		if err != nil {
			return nil, nil, err
		}
		return s, func() { _ = s.Close() }, nil
	}
	ctx, cancel := context.WithTimeout(ctx, openBudget)
	defer cancel()
	s, err := pgstore.Open(ctx, cfg.pg, pgstore.Options{Clock: clk, Logger: logger, GatedTypes: auth.SecurityTypes()})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, fmt.Errorf("opening PostgreSQL: no answer within %s: %w", openBudget, err)
		}
		return nil, nil, fmt.Errorf("opening PostgreSQL: %w", err)
	}
	return s, func() { _ = s.Close() }, nil
}

// seed writes a few demo notifications. Each has an identity, so a restart on
// PostgreSQL replaces them instead of adding more.
func seed(ctx context.Context, svc *notifications.Service) error {
	ctx, cancel := context.WithTimeout(ctx, seedBudget)
	defer cancel()
	demo := []struct {
		n  notifications.Notification
		to []string
	}{
		{notifications.Notification{Title: "Welcome to meshrx", Message: "Your bell reads only your own partition.",
			Type: notifications.General, TargetPath: "meshrx/Docs/welcome", CreatedBy: "system"}, []string{"alice", "bob"}},
		{notifications.Notification{Title: "Review requested", Message: "bob asks you to approve the Q3 report.",
			Type: notifications.ApprovalRequired, TargetPath: "acme/Reports/q3", CreatedBy: "bob"}, []string{"alice"}},
		{notifications.Notification{Title: "Nightly backup finished", Message: "All partitions were backed up.",
			Type: notifications.System, TargetPath: "Admin/Backups", CreatedBy: "system"}, nil}, // to Admin
	}
	for _, d := range demo {
		d.n.Identity = "demo:" + d.n.Title
		if _, err := svc.Create(ctx, d.n, d.to...); err != nil {
			return fmt.Errorf("seeding demo notifications: %w", err)
		}
	}
	return nil
}

// serve serves h on ln until ctx ends, then shuts the server down: live
// event streams are ended first (they would never go idle by themselves),
// then open requests get shutdownBudget to finish. It holds at most
// h.lim.conns connections (an idle keep-alive one gives its slot to a new
// client), closes a connection whose request headers do not arrive within
// h.lim.readHeader, one whose request (body included) does not arrive
// within h.lim.read, one whose answer is not written within h.lim.write,
// and an idle one after h.lim.idle.
//
// Requests' contexts are not ended at shutdown: the streams are ended by
// closeStreams, and a send or read under way finishes within the budget.
func serve(ctx context.Context, ln net.Listener, h *server, logger *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: h.lim.readHeader,
		MaxHeaderBytes:    h.lim.headerBytes, // not net/http's default megabyte per connection
		ReadTimeout:       h.lim.read,        // a body that never arrives: net/http waits for it before answering, with no bound of its own
		WriteTimeout:      h.lim.write,       // a client that reads no answer holds no handler; streams set their own deadlines
		IdleTimeout:       h.lim.idle,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln = registry.LimitConnections(srv, ln, h.lim.conns)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		h.closeStreams() // taken over from net/http: its Serve no longer knows them
		return err
	case <-ctx.Done():
	}
	logger.Info("bell: shutting down")
	h.closeStreams()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	<-served // Serve returns at once when Shutdown starts
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: open requests did not finish within %s: %w", shutdownBudget, err)
	}
	return nil
}
