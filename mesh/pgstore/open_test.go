package pgstore

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
)

// refusedURL is a database URL on a loopback port nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "postgres://meshrx@" + addr + "/meshrx?sslmode=disable"
}

// Before: Open's error was pgx's text, "failed to connect to `user=…`: …
// connection refused", and mesh.IsUnavailable(err) was false.
func TestOpenAgainstARefusedPortIsUnavailableAndSaysWhatToCheck(t *testing.T) {
	u := refusedURL(t)
	host := strings.TrimPrefix(strings.Split(u, "/")[2], "meshrx@")
	_, err := Open(testContext(t), u, Options{})
	require.Error(t, err)
	assert.True(t, mesh.IsUnavailable(err), "a database that cannot be reached is unavailable: %v", err)
	assert.ErrorContains(t, err, host)
	assert.ErrorContains(t, err, "check that PostgreSQL is running and listening there")
	assert.ErrorContains(t, err, "connection refused", "the driver's cause is kept")

	err = MigrateURL(testContext(t), u)
	assert.True(t, mesh.IsUnavailable(err), "the deploy step says the same: %v", err)

	// Negative control: a server that answers and refuses (no such
	// database) is the caller's to fix, not unavailable.
	missing, err := url.Parse(pg.Database(t))
	require.NoError(t, err)
	missing.Path = "/no_such_database_here"
	_, err = Open(testContext(t), missing.String(), Options{})
	require.Error(t, err)
	assert.False(t, mesh.IsUnavailable(err), "%v", err)
	assert.ErrorContains(t, err, "check the user, password and database name")
}

func migrationsTableExists(t *testing.T, dbURL string) bool {
	t.Helper()
	var exists bool
	require.NoError(t, connect(t, dbURL).QueryRow(testContext(t),
		`SELECT to_regclass('public.meshrx_migrations') IS NOT NULL`).Scan(&exists))
	return exists
}

func TestSkipMigrateChangesNoSchemaAndRefusesADatabaseMigrateURLHasNotMigrated(t *testing.T) {
	t.Parallel()
	fresh := pg.Database(t)
	_, err := Open(testContext(t), fresh, Options{SkipMigrate: true})
	require.ErrorIs(t, err, ErrNotMigrated)
	assert.ErrorContains(t, err, "MigrateURL")
	assert.False(t, migrationsTableExists(t, fresh), "SkipMigrate changed nothing")

	require.NoError(t, MigrateURL(testContext(t), fresh))
	require.NoError(t, MigrateURL(testContext(t), fresh), "running the deploy step again changes nothing")
	s := openStore(t, fresh, Options{SkipMigrate: true})
	put(t, s, mesh.Node{Path: "acme/a", NodeType: "Item", Name: "Alpha"})
	assert.Len(t, initialOf(t, s, "namespace:acme nodeType:Item").Items, 1)

	// A migration missing from the table is named.
	_, err = connect(t, fresh).Exec(testContext(t), `DELETE FROM public.meshrx_migrations WHERE name = (SELECT max(name) FROM public.meshrx_migrations)`)
	require.NoError(t, err)
	_, err = Open(testContext(t), fresh, Options{SkipMigrate: true})
	require.ErrorIs(t, err, ErrNotMigrated)
	assert.ErrorContains(t, err, ".sql is not applied")

	// Negative control: without SkipMigrate, Open migrates a fresh database.
	other := pg.Database(t)
	openStore(t, other, Options{})
	assert.True(t, migrationsTableExists(t, other))
}

// holdingProxy forwards connections to upstream, except one whose startup
// message names application_name hold: that one is held, unanswered, and
// held is closed when it arrives. Nothing else is touched.
type holdingProxy struct {
	l        net.Listener
	upstream string
	hold     string
	held     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func newHoldingProxy(t *testing.T, upstream, hold string) *holdingProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &holdingProxy{l: l, upstream: upstream, hold: hold, held: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *holdingProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *holdingProxy) close() {
	_ = p.l.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *holdingProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.track(c)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c)
		}()
	}
}

// readMessage reads one untyped startup-phase message: its length, then
// the rest.
func readMessage(c net.Conn) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n < 8 || n > 1<<16 {
		return nil, fmt.Errorf("startup message of %d bytes", n)
	}
	msg := make([]byte, n)
	copy(msg, head[:])
	_, err := io.ReadFull(c, msg[4:])
	return msg, err
}

const sslRequestCode = 80877103

func (p *holdingProxy) serve(c net.Conn) {
	defer c.Close()
	msg, err := readMessage(c)
	if err != nil {
		return
	}
	if binary.BigEndian.Uint32(msg[4:8]) == sslRequestCode {
		if _, err := c.Write([]byte{'N'}); err != nil { // no TLS here: the client goes on in plain text
			return
		}
		if msg, err = readMessage(c); err != nil {
			return
		}
	}
	if strings.Contains(string(msg), "application_name\x00"+p.hold+"\x00") {
		p.once.Do(func() { close(p.held) })
		_, _ = io.Copy(io.Discard, c) // until the client gives up, or the proxy closes
		return
	}
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	p.track(up)
	defer up.Close()
	if _, err := up.Write(msg); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(c, up)
		_ = c.Close()
		close(done)
	}()
	_, _ = io.Copy(up, c)
	_ = up.Close()
	<-done
}

// Before: Close while the key backfill was connecting logged
// "WARN key backfill could not connect … context canceled". The proxy
// holds the backfill's connection, so Close always finds it connecting.
func TestCloseSoonAfterOpenLogsNoWarning(t *testing.T) {
	t.Parallel()
	dbURL := pg.Database(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	proxy := newHoldingProxy(t, u.Host, backfillAppName)
	u.Host = proxy.l.Addr().String()

	logs, logger := testkit.CaptureLogs()
	s, err := Open(testContext(t), u.String(), Options{Logger: logger, MaxConns: 2})
	require.NoError(t, err)
	testkit.Receive(t, proxy.held, "the key backfill's connection attempt")
	require.NoError(t, s.Close())

	assert.Empty(t, logs.AtOrAbove(slog.LevelWarn), "a shutdown is not a warning")
	assert.NotEmpty(t, logs.Matching(slog.LevelInfo, "stopped by Close"), "the stop is still said, at Info")
}
