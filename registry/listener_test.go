package registry

import (
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingListener counts the connections it has accepted that are not
// closed yet (the descriptors they hold), and the most at once.
type countingListener struct {
	net.Listener
	mu        sync.Mutex
	open, max int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.open++
	l.max = max(l.max, l.open)
	l.mu.Unlock()
	return &countedConn{Conn: c, l: l}, nil
}

func (l *countingListener) peak() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.max
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}

// idleServer serves /ok on ln with a short ReadHeaderTimeout, the bound
// that closes a connection which never sends a request.
func idleServer(t *testing.T, ln net.Listener) string {
	t.Helper()
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }),
		ReadHeaderTimeout: 200 * time.Millisecond,
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return "http://" + ln.Addr().String() + "/ok"
}

// dialIdle opens n connections that never send anything.
func dialIdle(t *testing.T, addr string, n int) {
	t.Helper()
	for range n {
		c, err := net.DialTimeout("tcp", addr, testkit.Bound)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
	}
}

func TestIdleConnectionsCannotHoldMoreThanTheCapOfDescriptors(t *testing.T) {
	const limit, idle = 4, 24
	for _, c := range []struct {
		name    string
		limited bool
	}{{"capped", true}, {"negative control: uncapped", false}} {
		t.Run(c.name, func(t *testing.T) {
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			counter := &countingListener{Listener: raw}
			var ln net.Listener = counter
			if c.limited {
				ln = LimitListener(counter, limit)
			}
			url := idleServer(t, ln)
			dialIdle(t, ln.Addr().String(), idle)

			// A real request gets through once the idle ones are cut at the
			// server's ReadHeaderTimeout; bounded, never a sleep.
			client := &http.Client{Timeout: testkit.Bound}
			resp, err := client.Get(url)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			client.CloseIdleConnections()

			if c.limited {
				assert.LessOrEqual(t, counter.peak(), limit, "never more than the cap open")
			} else {
				assert.Greater(t, counter.peak(), limit, "without the cap every idle client holds a descriptor")
			}
		})
	}
}

func TestALimitListenerWaitingForASlotReturnsWhenClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := LimitListener(ln, 1)
	accepted := make(chan error, 2)
	go func() {
		c, err := l.Accept()
		if err == nil {
			defer c.Close()
			_, err = l.Accept() // waits for a slot: the first is held
		}
		accepted <- err
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), testkit.Bound)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, l.Close())
	assert.ErrorIs(t, testkit.Receive(t, accepted, "the waiting Accept to return"), net.ErrClosed)
}

// keepAliveServer serves /livez on ln with an IdleTimeout far longer than
// the test: only the limit can free an idle connection's slot.
func keepAliveServer(t *testing.T, srv *http.Server, ln net.Listener) string {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return "http://" + ln.Addr().String() + "/livez"
}

// TestIdleKeepAliveConnectionsDoNotHoldTheConnectionCapFromANewClient: with
// a cap of N, N clients each leave a keep-alive connection idle after a
// request; a new client is still answered promptly, and the cap holds.
// Negative control: the listener without the server's connection states
// (LimitListener, as the registry had) leaves the new client waiting until
// its own deadline, since the idle connections hold every slot until
// IdleTimeout.
func TestIdleKeepAliveConnectionsDoNotHoldTheConnectionCapFromANewClient(t *testing.T) {
	const limit = 4
	// wait is the new client's deadline: a ceiling for a hang where it must
	// be answered (at 2s, a loaded machine could pass it), the seconds the
	// negative control waits out where it must not be.
	run := func(t *testing.T, wait time.Duration, limited func(*http.Server, net.Listener) net.Listener) (newClientErr error, peak int) {
		raw, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		counter := &countingListener{Listener: raw}
		srv := &http.Server{
			Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }),
			ReadHeaderTimeout: time.Minute,
			IdleTimeout:       time.Minute,
		}
		url := keepAliveServer(t, srv, limited(srv, counter))
		for range limit {
			tr := &http.Transport{MaxIdleConnsPerHost: 1}
			t.Cleanup(tr.CloseIdleConnections)
			resp, err := (&http.Client{Transport: tr, Timeout: testkit.Bound}).Get(url)
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
		// The new client's wait is the subject: bounded, and its outcome
		// asserted.
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: wait}).Get(url)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err, counter.peak()
	}
	err, peak := run(t, testkit.Bound, func(srv *http.Server, ln net.Listener) net.Listener { return LimitConnections(srv, ln, limit) })
	assert.NoError(t, err, "a new client is answered while idle keep-alive connections fill the cap")
	assert.LessOrEqual(t, peak, limit, "the cap holds")

	t.Run("negative control: a limit that cannot tell idle connections", func(t *testing.T) {
		err, _ := run(t, 2*time.Second, func(_ *http.Server, ln net.Listener) net.Listener { return LimitListener(ln, limit) })
		assert.Error(t, err, "the new client waits out its deadline behind idle connections")
	})
}

// TestSilentConnectionsDoNotHoldTheConnectionCapPastTheirGrace: with a cap
// of N held by N connections that never send a byte, and a
// ReadHeaderTimeout far longer than the test, a new client is answered once
// the silent ones pass SilentConnectionGrace. Negative control: the plain
// LimitListener leaves it waiting out its deadline.
func TestSilentConnectionsDoNotHoldTheConnectionCapPastTheirGrace(t *testing.T) {
	const limit = 3
	// wait is the new client's deadline: a ceiling for a hang where it must
	// be answered (the grace and 3s, which a loaded machine could pass), a
	// wait well past the grace where it must not be.
	run := func(t *testing.T, wait time.Duration, limited func(*http.Server, net.Listener) net.Listener) error {
		raw, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := &http.Server{
			Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }),
			ReadHeaderTimeout: time.Minute,
		}
		url := keepAliveServer(t, srv, limited(srv, raw))
		dialIdle(t, raw.Addr().String(), limit)
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: wait}).Get(url)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	assert.NoError(t, run(t, testkit.Bound, func(srv *http.Server, ln net.Listener) net.Listener { return LimitConnections(srv, ln, limit) }))
	t.Run("negative control: a limit that cannot tell silent connections", func(t *testing.T) {
		assert.Error(t, run(t, SilentConnectionGrace+3*time.Second, func(_ *http.Server, ln net.Listener) net.Listener { return LimitListener(ln, limit) }))
	})
}
