package registry

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawPublish opens a connection to the fixture's server and sends a
// publication's head declaring contentLength, then body (which may be
// shorter: a stalled upload).
func (f *fixture) rawPublish(t *testing.T, contentLength int, body string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", f.http.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "POST %s/Acme.Crm?version=1.0.0 HTTP/1.1\r\nHost: registry.test\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
		client.BundlesPath, testPublishToken, contentLength, body)
	require.NoError(t, err)
	// A ceiling for a stuck test, not a delay a passing one spends.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(2*testkit.Bound)))
	return conn, bufio.NewReader(conn)
}

func TestAStalledUploadIsAnswered408AtThePublishBudgetWithItsConnectionClosed(t *testing.T) {
	const budget = 300 * time.Millisecond
	f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) { o.PublishBudget = budget }})
	start := time.Now()
	_, br := f.rawPublish(t, 1000, "PK")
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "the stalled upload is answered")
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", body)
	assert.GreaterOrEqual(t, time.Since(start), budget, "answered at the budget, not before")
	assert.True(t, resp.Close, "the answer says the connection closes")
	_, err = br.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "and the server closes it: it does not wait for the rest of the body")

	// Shutdown is prompt: no connection is left waiting on a body.
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Bound)
	defer cancel()
	assert.NoError(t, f.http.Config.Shutdown(ctx))
	assert.Empty(t, f.activation())
	// Negative control (in words, the old code being gone): the gate used to
	// clear the read deadline when it returned and keep the connection; the
	// server then waited to drain the 998 bytes never sent, past ReadTimeout,
	// and the ReadResponse above tripped its ceiling while Shutdown timed out.
}

func TestADeclaredContentLengthOverTheCapIsRefusedBeforeReading(t *testing.T) {
	const limit = 1000
	f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) {
		o.MaxPublishBytes = limit
		o.PublishBudget = time.Hour // a read of the body would wait this long
	}})
	_, br := f.rawPublish(t, limit+1, "") // not a byte of body is sent
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "refused without waiting for a body")
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "larger than")
	assert.True(t, resp.Close)

	// Control: a declared length within the cap is read, so the same empty
	// body waits (here until the connection is given up): it is the
	// declared length that refused at once.
	g := newFixture(t, fixtureOptions{server: func(o *ServerOptions) {
		o.MaxPublishBytes = limit
		o.PublishBudget = 200 * time.Millisecond
	}})
	start := time.Now()
	_, br = g.rawPublish(t, limit, "")
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "the body within the cap was waited for")
}

func TestConcurrentUploadsBeyondTheirSlotsAre503WithRetryAfter(t *testing.T) {
	spoolDir := t.TempDir()
	f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) {
		o.UploadSlots = 1
		o.SpoolDir = spoolDir
	}})
	spooled := func() int {
		entries, err := os.ReadDir(spoolDir)
		require.NoError(t, err)
		return len(entries)
	}
	// One upload holds the only slot: it is spooling and stalls.
	conn, _ := f.rawPublish(t, 1000, "PK")
	require.Eventually(t, func() bool { return spooled() == 1 }, testkit.Bound, time.Millisecond, "the first upload spooling")

	archive := testkit.ModuleArchive(t, "Acme.Crm", "1.0.0", 1)
	got := f.do(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, archive))
	assert.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
	assert.Equal(t, "5", got.header.Get("Retry-After"), "the one DefaultRetryAfter")
	assert.Contains(t, string(got.body), StageUploadSlots)
	assert.Equal(t, 1, spooled(), "the refused upload was not spooled")

	// Control: once the slot is given back (the stalled client leaves), the
	// same publication lands; spool files are removed.
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { return spooled() == 0 }, testkit.Bound, time.Millisecond, "the abandoned upload's spool removed")
	got = f.do(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, archive))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	assert.Equal(t, 0, spooled())
}

// zeros is an endless reader of zero bytes that allocates nothing.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// allocated returns how many bytes the process allocated while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestUploadsStreamToDiskNotWholeIntoMemory(t *testing.T) {
	const sent = landing.DefaultMaxArchive + 32<<20 // chunked, so its size is not declared
	f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) { o.SpoolDir = t.TempDir() }})
	var got *http.Response
	alloc := allocated(func() {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.http.URL+client.BundlesPath+"/Acme.Crm?version=1.0.0",
			io.LimitReader(zeroReader{}, sent))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+testPublishToken)
		got, err = f.http.Client().Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, got.Body)
		_ = got.Body.Close()
	})
	assert.Equal(t, http.StatusRequestEntityTooLarge, got.StatusCode)
	const ceiling = 16 << 20
	assert.Less(t, alloc, uint64(ceiling), "%d MiB allocated receiving %d MiB", alloc>>20, sent>>20)
	t.Logf("receiving a %d MiB chunked upload allocated %.1f MiB in all (client and server)", sent>>20, float64(alloc)/(1<<20))
	assert.Empty(t, f.activation())

	// Negative control: reading the upload whole, as the gate did, is
	// beyond the ceiling by the same measure.
	whole := allocated(func() {
		b, err := io.ReadAll(io.LimitReader(zeroReader{}, landing.DefaultMaxArchive))
		require.NoError(t, err)
		require.Len(t, b, landing.DefaultMaxArchive)
	})
	assert.Greater(t, whole, uint64(ceiling))
	t.Logf("reading %d MiB whole, as the gate did: %.1f MiB", landing.DefaultMaxArchive>>20, float64(whole)/(1<<20))
}

// plainVolume hides WriteFrom: a Volume that cannot stream, as a user's
// own may be (the negative control for streaming).
type plainVolume struct{ landing.Volume }

func TestALandingStreamsItsArchiveToTheVolumeNotWholeIntoMemory(t *testing.T) {
	const size = 24 << 20
	archive := testkit.Zip(t, testkit.Entry{Name: "lib/blob.bin", Body: testkit.RandomBytes(size), Store: true})
	spool := filepath.Join(t.TempDir(), "upload.zip")
	require.NoError(t, os.WriteFile(spool, archive, 0o644))
	land := func(t *testing.T, v landing.Volume) uint64 {
		f, err := os.Open(spool)
		require.NoError(t, err)
		defer f.Close()
		l := newLanding(t, v, landing.Options{})
		return allocated(func() {
			_, created, err := l.LandArchive(t.Context(), "Big", "1.0.0", f, int64(len(archive)))
			require.NoError(t, err)
			require.True(t, created)
		})
	}
	const ceiling = 8 << 20
	streamed := land(t, landing.DirVolume(t.TempDir()))
	assert.Less(t, streamed, uint64(ceiling), "%d MiB allocated landing a %d MiB archive", streamed>>20, size>>20)
	t.Logf("landing a %d MiB archive allocated %.1f MiB", size>>20, float64(streamed)/(1<<20))

	t.Run("negative control: a volume that cannot stream holds the bytes", func(t *testing.T) {
		whole := land(t, plainVolume{landing.DirVolume(t.TempDir())})
		assert.Greater(t, whole, uint64(size))
		t.Logf("through a volume that cannot stream: %.1f MiB", float64(whole)/(1<<20))
	})
}
