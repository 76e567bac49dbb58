package registry

import (
	"github.com/meshrx/meshrx/registry/landing/s3volume"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
)

// A registry on an S3 volume whose store stalls (it takes the request and
// never answers) answers a download 503 with Retry-After, naming the
// bundle read, once the volume's call budget runs out, well before the
// download's own budget; the log names the request and the key. Negative
// control: a moment before the call budget the request is still held.
// When the store answers again, the same download is a 200.
func TestAStalledObjectStoreIsA503NamingTheBundleReadAtTheVolumesCallBudget(t *testing.T) {
	const budget = 5 * time.Second
	srv := s3test.Start(t)
	s3clk := clock.NewMock()
	f := newFixture(t, fixtureOptions{volume: func(landing.Volume) landing.Volume {
		v, err := s3volume.New(s3volume.Options{Client: srv.Client(), Bucket: srv.Bucket, Prefix: "reg", CallBudget: budget, Clock: s3clk})
		require.NoError(t, err)
		return v
	}})
	key := f.instance("acme", "pro", "Plugins/*")
	f.publish("Acme.Crm", "1.2.0", "free")
	path := client.BundlesPath + "/Acme.Crm/1.2.0"
	require.Equal(t, http.StatusOK, f.do(request{path: path, key: key}).status, "control: the store answering, the download is served")

	entered := srv.Stall()
	replies := f.send(request{path: path, key: key})
	testkit.Receive(t, entered, "the download's read reaching the store")
	s3clk.Add(budget - time.Nanosecond)
	assert.Empty(t, replies, "the request was answered before the call budget ran out")
	s3clk.Add(time.Nanosecond)
	got := testkit.Receive(t, replies, "the refusal at the call budget")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
	assert.NotEmpty(t, got.header.Get("Retry-After"))
	assert.Equal(t, StageBundleRead, got.refusal(t).Stage)
	logged := false
	for _, w := range f.logs.At(slog.LevelWarn) {
		if err := w.Attrs["error"].String(); strings.Contains(err, "no answer within the call budget") && strings.Contains(err, "reg/modules/acme.crm/records/") {
			logged = true
		}
	}
	assert.True(t, logged, "the log names the request and the key: %v", f.logs.At(slog.LevelWarn))

	srv.Resume()
	assert.Equal(t, http.StatusOK, f.do(request{path: path, key: key}).status, "served again once the store answers")
}
