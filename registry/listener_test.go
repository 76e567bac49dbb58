package registry

import (
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// connCounter tracks how many connections an http.Server holds open at
// once, and the most it ever held.
type connCounter struct {
	mu        sync.Mutex
	open, max int
}

func (c *connCounter) state(_ net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateNew:
		c.open++
		c.max = max(c.max, c.open)
	case http.StateClosed, http.StateHijacked:
		c.open--
	}
}

func (c *connCounter) peak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

// idleServer serves /ok on ln with a short ReadHeaderTimeout, the bound
// that closes a connection which never sends a request.
func idleServer(t *testing.T, ln net.Listener) (*connCounter, string) {
	t.Helper()
	counter := &connCounter{}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }),
		ReadHeaderTimeout: 200 * time.Millisecond,
		ConnState:         counter.state,
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return counter, "http://" + ln.Addr().String() + "/ok"
}

// dialIdle opens n connections that never send anything.
func dialIdle(t *testing.T, addr string, n int) {
	t.Helper()
	for range n {
		c, err := net.DialTimeout("tcp", addr, bound)
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
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			if c.limited {
				ln = LimitListener(ln, limit)
			}
			counter, url := idleServer(t, ln)
			dialIdle(t, ln.Addr().String(), idle)

			// A real request gets through once the idle ones are cut at the
			// server's ReadHeaderTimeout; bounded, never a sleep.
			client := &http.Client{Timeout: 10 * time.Second}
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
	c, err := net.DialTimeout("tcp", ln.Addr().String(), bound)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, l.Close())
	assert.ErrorIs(t, receive(t, accepted, "the waiting Accept to return"), net.ErrClosed)
}
