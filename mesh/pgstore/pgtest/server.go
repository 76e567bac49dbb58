package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Default budgets. Each is the longest the named wait may take before it
// fails with an error that says what was being waited on.
const (
	DefaultStartBudget = 2 * time.Minute  // initdb, server start and first connection
	DefaultStopBudget  = 30 * time.Second // pg_ctl stop and the server's exit
	DefaultOpBudget    = 30 * time.Second // one CreateDatabase or DropDatabase
)

// ErrStopped is returned by a Server that has been stopped.
var ErrStopped = errors.New("pgtest: server stopped")

// WaitError reports a bounded wait that ran out.
type WaitError struct {
	What   string        // what was waited on
	Budget time.Duration // how long it was allowed to take
	Err    error         // the last error seen while waiting, if any
}

func (e *WaitError) Error() string {
	msg := fmt.Sprintf("pgtest: gave up after %s waiting for %s", e.Budget, e.What)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *WaitError) Unwrap() error { return e.Err }

// Config says how Start gets a server. The zero Config starts a throwaway
// local server with the programs FindBinaries finds.
type Config struct {
	URL         string        // use this server instead of starting one
	Binaries    Binaries      // programs for a local server; zero: FindBinaries(PATH, DebianRoot)
	TempDir     string        // parent of a local server's directory; "": os.TempDir()
	StartBudget time.Duration // 0: DefaultStartBudget
	StopBudget  time.Duration // 0: DefaultStopBudget
	OpBudget    time.Duration // 0: DefaultOpBudget
	Logger      *slog.Logger  // nil: no logs
}

func (c Config) startBudget() time.Duration { return orDefault(c.StartBudget, DefaultStartBudget) }
func (c Config) stopBudget() time.Duration  { return orDefault(c.StopBudget, DefaultStopBudget) }
func (c Config) opBudget() time.Duration    { return orDefault(c.OpBudget, DefaultOpBudget) }

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Start returns a server for tests: the one named by MESHRX_PG_URL, or else a
// throwaway local one (see Config.Start). Without PostgreSQL programs it fails
// with a *NotFoundError.
func Start(ctx context.Context) (*Server, error) {
	return Config{URL: os.Getenv(EnvURL)}.Start(ctx)
}

// Start connects to c.URL, or else initdbs a throwaway cluster in a fresh
// directory under c.TempDir (named meshrx-pgtest-<pid>-*, so a directory left
// by a crashed run is recognisable; Start removes those whose process is gone)
// and starts it on a free loopback port. The whole start is bounded by
// c.StartBudget as well as ctx.
func (c Config) Start(ctx context.Context) (*Server, error) {
	ctx, cancel := context.WithTimeout(ctx, c.startBudget())
	defer cancel()
	s := &Server{cfg: c, created: make(map[string]bool)}
	if c.URL != "" {
		if err := ping(ctx, c.URL); err != nil {
			return nil, fmt.Errorf("pgtest: connecting to the server %s names (%s): %w", EnvURL, redact(c.URL), err)
		}
		s.url = c.URL
		return s, nil
	}
	if c.Binaries == (Binaries{}) {
		bins, err := FindBinaries(os.Getenv("PATH"), DebianRoot)
		if err != nil {
			return nil, err
		}
		c.Binaries = bins
		s.cfg = c
	}
	cl, err := startCluster(ctx, c)
	if err != nil {
		return nil, err
	}
	s.local = cl
	s.url = cl.url()
	return s, nil
}

// Server is a PostgreSQL server for tests. Its methods are safe for
// concurrent use.
type Server struct {
	cfg   Config
	url   string   // the maintenance database, for creating and dropping others
	local *cluster // nil when the server is external

	ops sync.WaitGroup // CreateDatabase and DropDatabase calls in flight

	mu       sync.Mutex
	created  map[string]bool // databases CreateDatabase made that are not dropped yet
	stopped  bool
	stopErr  error
	stopDone chan struct{}
}

// URL returns the URL of the server's maintenance database.
func (s *Server) URL() string { return s.url }

// Dir returns the local server's directory (data, socket, log), or "" for
// an external server.
func (s *Server) Dir() string {
	if s.local == nil {
		return ""
	}
	return s.local.dir
}

// CreateDatabase creates an empty database and returns its URL. label (a
// test or package name) becomes part of the name, which is made unique
// (meshrx_<label>_<random>) so that concurrent runs sharing one server never
// collide.
func (s *Server) CreateDatabase(ctx context.Context, label string) (string, error) {
	name, err := databaseName(label)
	if err != nil {
		return "", err
	}
	dbURL, err := withDatabase(s.url, name)
	if err != nil {
		return "", err
	}
	if err := s.begin(); err != nil {
		return "", err
	}
	defer s.ops.Done()

	ctx, cancel := context.WithTimeout(ctx, s.cfg.opBudget())
	defer cancel()
	if err := s.exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgtest: creating database %s: %w", name, err)
	}
	s.mu.Lock()
	s.created[name] = true
	s.mu.Unlock()
	return dbURL, nil
}

// DropDatabase drops a database that CreateDatabase made, closing any
// connections still open to it. It refuses to drop any other database.
func (s *Server) DropDatabase(ctx context.Context, dbURL string) error {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return fmt.Errorf("pgtest: dropping database: %w", err)
	}
	name := cfg.Database
	s.mu.Lock()
	ours := s.created[name]
	s.mu.Unlock()
	if !ours {
		return fmt.Errorf("pgtest: refusing to drop database %q: it was not created by this server", name)
	}
	if err := s.begin(); err != nil {
		return err
	}
	defer s.ops.Done()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.opBudget())
	defer cancel()
	return s.drop(ctx, name)
}

func (s *Server) drop(ctx context.Context, name string) error {
	if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("pgtest: dropping database %s: %w", name, err)
	}
	s.mu.Lock()
	delete(s.created, name)
	s.mu.Unlock()
	return nil
}

// begin registers an operation, or refuses it once Stop has begun.
func (s *Server) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	s.ops.Add(1)
	return nil
}

func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, sql)
	// Close on its own budget: a cancelled ctx must not leave the socket open.
	closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return errors.Join(err, conn.Close(closeCtx))
}

// Stop releases the server: a local server is shut down (pg_ctl stop -m fast,
// then killed if it has not exited within the stop budget) and its directory
// removed; on an external server the databases CreateDatabase made and nobody
// dropped are dropped. Stop is idempotent; later calls return the first
// call's result.
func (s *Server) Stop() error {
	s.mu.Lock()
	if s.stopped {
		done := s.stopDone
		s.mu.Unlock()
		<-done // bounded: the first call's stop is itself bounded by the stop budget
		return s.stopErr
	}
	s.stopped = true
	s.stopDone = make(chan struct{})
	s.mu.Unlock()
	defer close(s.stopDone)

	// Operations in flight are each bounded by the op budget.
	s.ops.Wait()
	if s.local != nil {
		s.stopErr = s.local.stop(s.cfg.stopBudget())
		return s.stopErr
	}
	s.mu.Lock()
	names := make([]string, 0, len(s.created))
	for name := range s.created {
		names = append(names, name)
	}
	s.mu.Unlock()
	var errs []error
	for _, name := range names {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.opBudget())
		errs = append(errs, s.drop(ctx, name))
		cancel()
	}
	s.stopErr = errors.Join(errs...)
	return s.stopErr
}

func ping(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	err = conn.Ping(ctx)
	closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return errors.Join(err, conn.Close(closeCtx))
}

// databaseName turns a label into a unique database name of at most 63 bytes
// made of [a-z0-9_].
func databaseName(label string) (string, error) {
	var b strings.Builder
	underscore := false
	for _, r := range label {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			underscore = false
		} else if !underscore {
			b.WriteByte('_')
			underscore = true
		}
	}
	slug := strings.Trim(b.String(), "_")
	const prefix, suffixLen, maxLen = "meshrx_", 1 + 12, 63
	if room := maxLen - len(prefix) - suffixLen - 1; len(slug) > room {
		slug = strings.TrimRight(slug[:room], "_")
	}
	if slug == "" {
		slug = "db"
	}
	random := make([]byte, 6)
	if _, err := rand.Read(random); err != nil {
		return "", fmt.Errorf("pgtest: naming a database: %w", err)
	}
	return prefix + slug + "_" + hex.EncodeToString(random), nil
}

// withDatabase returns dbURL (a postgres:// URL or a key=value connection
// string) with its database replaced by name, which must be [a-z0-9_].
func withDatabase(dbURL, name string) (string, error) {
	var out string
	if strings.HasPrefix(dbURL, "postgres://") || strings.HasPrefix(dbURL, "postgresql://") {
		u, err := url.Parse(dbURL)
		if err != nil {
			return "", fmt.Errorf("pgtest: parsing server URL: %w", err)
		}
		u.Path, u.RawPath = "/"+name, ""
		out = u.String()
	} else {
		// In a key=value string the last setting of a key wins.
		out = strings.TrimSpace(dbURL) + " dbname=" + name
	}
	cfg, err := pgx.ParseConfig(out)
	if err != nil {
		return "", fmt.Errorf("pgtest: building the URL of database %s: %w", name, err)
	}
	if cfg.Database != name {
		return "", fmt.Errorf("pgtest: building the URL of database %s: it names database %q", name, cfg.Database)
	}
	return out, nil
}

// redact hides a password in a URL meant for an error message.
func redact(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil || u.Scheme == "" {
		return "(connection string)"
	}
	return u.Redacted()
}
