package client_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
)

const publishToken = "publish-token-for-tests"

// publishRegistry runs a real registry (embedded store, a volume in a temp
// dir, the plan ladder free < pro) behind front, a wrapper a test may use to
// answer some requests itself, and returns its URL.
func publishRegistry(t *testing.T, maxPublish int64, front func(http.Handler) http.Handler) string {
	t.Helper()
	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	store, err := memstore.New(memstore.Options{Logger: logger})
	require.NoError(t, err)
	modules, err := landing.NewModuleLanding(landing.DirVolume(t.TempDir()), landing.Options{Logger: logger})
	require.NoError(t, err)
	served := registry.NewServedActivation(modules, registry.ServedOptions{Logger: logger})
	srv, err := registry.NewServer(registry.ServerOptions{
		Served:          served,
		Auth:            &auth.Authenticator{Mesh: store, Ladder: &auth.PlanTierLadder{Mesh: store, Logger: logger}, Logger: logger},
		Mesh:            store,
		Logger:          logger,
		Metrics:         prometheus.NewRegistry(),
		PublishToken:    publishToken,
		MaxPublishBytes: maxPublish,
	})
	require.NoError(t, err)
	reg := &auth.Instances{Mesh: store}
	for _, tier := range []auth.PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 2}} {
		require.NoError(t, reg.SetPlanTier(ctx, tier))
	}
	h := srv.Handler()
	if front != nil {
		h = front(h)
	}
	web := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx := context.Background()
		web.Close()
		_ = srv.Close(ctx)
		_ = served.Close(ctx)
		_ = modules.Shutdown(ctx)
		_ = store.Close()
	})
	return web.URL
}

func bundle(t *testing.T, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create("README.txt")
	require.NoError(t, err)
	_, err = w.Write([]byte(text))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func publisher(t *testing.T, url string, opts client.Options) *client.Client {
	t.Helper()
	opts.BaseURL, opts.PublishToken = url, publishToken
	c, err := client.New(opts)
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func TestPublishLandsABundleAndTheSameBytesAgainAreNotAnError(t *testing.T) {
	c := publisher(t, publishRegistry(t, 0, nil), client.Options{})
	b := bundle(t, "one")
	p, err := c.Publish(t.Context(), "My.Plugin", "1.0.0", "pro", bytes.NewReader(b))
	require.NoError(t, err)
	assert.True(t, p.Created)
	assert.Equal(t, sum(b), p.SHA256)
	assert.Equal(t, "pro", p.Tier)

	// A plain io.Reader (not seekable) is sent as well.
	p, err = c.Publish(t.Context(), "My.Plugin", "1.0.0", "", io.MultiReader(bytes.NewReader(b)))
	require.NoError(t, err)
	assert.False(t, p.Created, "the same bytes again: 200, nothing written")
}

func TestPublishingOtherBytesUnderAPublishedVersionIsAConflictNamingBothSha256(t *testing.T) {
	c := publisher(t, publishRegistry(t, 0, nil), client.Options{})
	first, second := bundle(t, "one"), bundle(t, "two")
	_, err := c.Publish(t.Context(), "My.Plugin", "1.0.0", "", bytes.NewReader(first))
	require.NoError(t, err, "negative control: the first bytes land")

	_, err = c.Publish(t.Context(), "My.Plugin", "1.0.0", "", bytes.NewReader(second))
	var conflict *client.ConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, sum(first), conflict.PublishedSHA256)
	assert.Equal(t, sum(second), conflict.GivenSHA256)
	assert.Contains(t, err.Error(), sum(first))
	assert.Contains(t, err.Error(), sum(second))
}

func TestPublishingAtATierTheLadderDoesNotHaveNamesTheKnownTiers(t *testing.T) {
	c := publisher(t, publishRegistry(t, 0, nil), client.Options{})
	_, err := c.Publish(t.Context(), "My.Plugin", "1.0.0", "gold", bytes.NewReader(bundle(t, "one")))
	var unknown *client.UnknownTierError
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, "gold", unknown.Tier)
	assert.ElementsMatch(t, []string{"free", "pro"}, unknown.Known)
	assert.ErrorContains(t, err, "free, pro")
	// Negative control: a known tier is accepted.
	_, err = c.Publish(t.Context(), "My.Plugin", "1.0.0", "free", bytes.NewReader(bundle(t, "one")))
	require.NoError(t, err)
}

func TestABundleOverTheRegistrysCapIsATooLargeError(t *testing.T) {
	small := bundle(t, "one")
	c := publisher(t, publishRegistry(t, int64(len(small)), nil), client.Options{})
	big := bundle(t, string(bytes.Repeat([]byte("x"), 4096)))
	require.Greater(t, len(big), len(small))
	_, err := c.Publish(t.Context(), "My.Plugin", "1.0.0", "", bytes.NewReader(big))
	var tooLarge *client.TooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.ErrorContains(t, err, "larger than")
	// Negative control: a bundle within the cap lands.
	_, err = c.Publish(t.Context(), "My.Plugin", "1.0.0", "", bytes.NewReader(small))
	require.NoError(t, err)

	// The client's own copy of a plain reader is bounded too.
	c = publisher(t, publishRegistry(t, 0, nil), client.Options{MaxPublishBytes: int64(len(small))})
	_, err = c.Publish(t.Context(), "My.Plugin", "1.0.0", "", io.MultiReader(bytes.NewReader(big)))
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, int64(len(small)), tooLarge.Limit)
}

// busyFront answers the first n publications 503 with Retry-After as the
// registry does when its upload slots are taken, and records when each
// attempt arrived.
type busyFront struct {
	n          int
	retryAfter string
	mu         sync.Mutex
	arrived    []time.Time
}

func (f *busyFront) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.arrived = append(f.arrived, time.Now())
		busy := len(f.arrived) <= f.n
		f.mu.Unlock()
		if busy {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Retry-After", f.retryAfter)
			http.Error(w, `{"error":"publish upload slots: all 4 are in use; publish again later"}`, http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// The retry waits what Retry-After asked (2s), not the client's own first
// backoff (1s): the gap between the attempts is the proof. The body is sent
// again whole, also from a plain reader.
func TestA503IsRetriedAfterItsRetryAfterWithTheWholeBundleSentAgain(t *testing.T) {
	front := &busyFront{n: 1, retryAfter: "2"}
	c := publisher(t, publishRegistry(t, 0, front.wrap), client.Options{Attempts: 2})
	b := bundle(t, "one")
	p, err := c.Publish(t.Context(), "My.Plugin", "1.0.0", "", io.MultiReader(bytes.NewReader(b)))
	require.NoError(t, err)
	assert.True(t, p.Created)
	assert.Equal(t, sum(b), p.SHA256, "the second attempt sent the whole bundle")
	require.Len(t, front.arrived, 2)
	assert.GreaterOrEqual(t, front.arrived[1].Sub(front.arrived[0]), 2*time.Second, "waited for Retry-After")

	// Negative control: with one attempt the 503 is the answer, with its
	// Retry-After.
	front = &busyFront{n: 1, retryAfter: "7"}
	c = publisher(t, publishRegistry(t, 0, front.wrap), client.Options{Attempts: 1})
	_, err = c.Publish(t.Context(), "My.Plugin", "1.0.0", "", bytes.NewReader(b))
	var he *client.HTTPError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusServiceUnavailable, he.Status)
	assert.Equal(t, 7*time.Second, he.RetryAfter)
	assert.ErrorContains(t, err, "POST")
}

func TestPublishWithoutAPublishTokenNamesTheOption(t *testing.T) {
	c, err := client.New(client.Options{BaseURL: "http://127.0.0.1:1", Key: "mwi_x"})
	require.NoError(t, err)
	_, err = c.Publish(t.Context(), "My.Plugin", "1.0.0", "", bytes.NewReader(nil))
	var ce *client.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "client.Options.PublishToken", ce.Setting)
	assert.False(t, errors.Is(err, context.Canceled))
}
