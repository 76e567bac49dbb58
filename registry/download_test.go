package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAGrantedDownloadStreamsTheBundleTheIndexDescribes(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	_, archive := f.publish("Acme.Crm", "1.2.0", "pro")
	key := f.instance("acme", "pro", "Plugins/Acme.Crm")
	idx, _ := f.index(key)
	require.Len(t, idx.Bundles, 1)

	got := f.do(request{path: client.BundlesPath + "/Acme.Crm/1.2.0", key: key})
	require.Equal(t, http.StatusOK, got.status, "%s", got.body)
	assert.True(t, bytes.Equal(archive, got.body), "the bundle arrives byte for byte")
	sum := sha256.Sum256(got.body)
	assert.Equal(t, idx.Bundles[0].SHA256, hex.EncodeToString(sum[:]), "the bytes match the index's sha256")
	assert.Equal(t, idx.Bundles[0].SHA256, got.header.Get(client.BundleDigestHeader))
	assert.Equal(t, `"`+idx.Bundles[0].SHA256+`"`, got.header.Get("ETag"))
	assert.Equal(t, "application/zip", got.header.Get("Content-Type"))
	assert.Equal(t, strconv.Itoa(len(archive)), got.header.Get("Content-Length"))

	// The URL's case need not match: module names compare without case,
	// and the grant is checked against the record's own spelling.
	lower := f.do(request{path: client.BundlesPath + "/acme.crm/1.2.0", key: key})
	assert.Equal(t, http.StatusOK, lower.status)
	assert.True(t, bytes.Equal(archive, lower.body))
}

func TestARefusedDownloadIsByteIdenticalToNoSuchBundle(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("Acme.Crm", "1.0.0", "")
	f.publish("Acme.Secret", "1.0.0", "")
	f.publish("Acme.Pro", "1.0.0", "pro")
	key := f.instance("acme", "free", "Plugins/Acme.Crm", "Plugins/Acme.Pro")
	wide := f.instance("wide", "enterprise", "Plugins/*")

	refusedByGrant := client.BundlesPath + "/Acme.Secret/1.0.0"
	refusedByTier := client.BundlesPath + "/Acme.Pro/1.0.0"
	missing := map[string]string{
		"no such module":  client.BundlesPath + "/Acme.Nothing/1.0.0",
		"no such version": client.BundlesPath + "/Acme.Crm/9.9.9",
		"traversal":       client.BundlesPath + "/..%2f..%2fetc/passwd",
		"bad version":     client.BundlesPath + "/Acme.Crm/..%2f..",
	}
	want := f.do(request{path: missing["no such module"], key: key})
	require.Equal(t, http.StatusNotFound, want.status)
	for name, path := range map[string]string{"refused by grant": refusedByGrant, "refused by tier": refusedByTier} {
		got := f.do(request{path: path, key: key})
		assertSameAnswer(t, want, got, name)
	}
	for name, path := range missing {
		assertSameAnswer(t, want, f.do(request{path: path, key: key}), name)
	}

	// Control: the refused bundles exist and download for a caller that may
	// have them, so the 404s above are refusals, not absences.
	for _, path := range []string{refusedByGrant, refusedByTier} {
		assert.Equal(t, http.StatusOK, f.do(request{path: path, key: wide}).status, path)
	}
}

// assertSameAnswer requires two replies to be indistinguishable: status,
// every header but Date, and body.
func assertSameAnswer(t *testing.T, want, got reply, name string) {
	t.Helper()
	assert.Equal(t, want.status, got.status, name)
	assert.Equal(t, want.body, got.body, name)
	wh, gh := want.header.Clone(), got.header.Clone()
	wh.Del("Date")
	gh.Del("Date")
	assert.Equal(t, wh, gh, name)
}

func TestATraversalAttemptIs404WithoutTouchingTheVolume(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("Acme.Crm", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")

	for _, path := range []string{
		client.BundlesPath + "/..%2f..%2fetc/passwd",
		client.BundlesPath + "/Acme.Crm/..%2f..%2f..%2fetc%2fpasswd",
		client.BundlesPath + "/%2e%2e/passwd",
		client.BundlesPath + "/Acme.Crm%00/1.0.0",
	} {
		before := f.volume.Ops()
		got := f.do(request{path: path, key: key})
		assert.Equal(t, http.StatusNotFound, got.status, path)
		assert.Zero(t, f.volume.Ops().Sub(before).Total(), "%s touched the volume", path)
	}
	// Control: an entitled package at a version that is absent is looked up
	// on the volume, so the counter does see a download's reads.
	before := f.volume.Ops()
	assert.Equal(t, http.StatusNotFound, f.do(request{path: client.BundlesPath + "/Acme.Crm/9.9.9", key: key}).status)
	assert.NotZero(t, f.volume.Ops().Sub(before).Total())
}

func TestADownloadWithoutAKeyIs401(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("Acme.Crm", "1.0.0", "")
	before := f.volume.Ops()
	got := f.do(request{path: client.BundlesPath + "/Acme.Crm/1.0.0"})
	assert.Equal(t, http.StatusUnauthorized, got.status)
	assert.Zero(t, f.volume.Ops().Sub(before).Total(), "an unauthenticated download reads nothing")
}

// chunkedReader returns its chunks one Read at a time, then err.
type chunkedReader struct {
	chunks [][]byte
	err    error
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, c.err
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

func TestACorruptBundleNeverArrivesWhole(t *testing.T) {
	corrupt := errors.New("sha256 mismatch")
	var out bytes.Buffer
	err := copyVerified(&out, &chunkedReader{chunks: [][]byte{[]byte("head"), []byte("tail")}, err: corrupt})
	require.ErrorIs(t, err, corrupt)
	assert.Equal(t, "head", out.String(), "the last chunk is withheld until the end is known to be clean")

	// Control: a clean end delivers everything, however the reads fall.
	out.Reset()
	require.NoError(t, copyVerified(&out, &chunkedReader{chunks: [][]byte{[]byte("head"), []byte("tail")}, err: io.EOF}))
	assert.Equal(t, "headtail", out.String())
	out.Reset()
	require.NoError(t, copyVerified(&out, iotest.DataErrReader(iotest.OneByteReader(bytes.NewReader([]byte("abc"))))))
	assert.Equal(t, "abc", out.String())
}

func TestABundleCorruptedOnTheVolumeIsCutShort(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	rec, archive := f.publish("Acme.Crm", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	// Same size, different bytes: only the digest can tell.
	bad := bytes.Clone(archive)
	bad[len(bad)-1] ^= 0xff
	require.NoError(t, landing.DirVolume(f.root).WriteFile(t.Context(), bundlePath(moduleKey(rec.Module), rec.Generation), bad))

	r, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.http.URL+client.BundlesPath+"/Acme.Crm/1.0.0", nil)
	require.NoError(t, err)
	r.Header.Set("Authorization", "Bearer "+key)
	resp, err := f.http.Client().Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the client must see a short body, not a whole corrupt bundle")
	assert.Less(t, len(body), len(archive))
}

// oneFileOutage fails the reads of one file as a passing outage of the
// volume does (an object store's 503): the next read may succeed.
type oneFileOutage struct {
	landing.Volume
	down atomic.Pointer[string]
}

func (v *oneFileOutage) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	if p := v.down.Load(); p != nil && *p == name {
		return nil, fmt.Errorf("GetObject %s: 503 Slow Down: %w", name, landing.ErrUnavailable)
	}
	return v.Volume.ReadFile(ctx, name, max)
}

// A download of a module another replica has just uninstalled, while the
// volume fails to answer for the uninstall's record, is a 503 with
// Retry-After: not the bundle of the record beneath it, which this
// replica's snapshot still lists. Once the volume answers it is the
// refusal every missing bundle gets. Negative control (run): with the
// landing passing an outage over as a bad record, the download is a 200
// carrying the uninstalled bundle.
func TestADownloadOfAModuleUninstalledElsewhereDuringAnOutageIsA503NotItsBundle(t *testing.T) {
	var outage *oneFileOutage
	f := newFixture(t, fixtureOptions{volume: func(v landing.Volume) landing.Volume {
		outage = &oneFileOutage{Volume: v}
		return outage
	}})
	f.publish("Acme.Crm", "1.0.0", "")
	key := f.instance("acme", "free", "Plugins/Acme.Crm")
	path := client.BundlesPath + "/Acme.Crm/1.0.0"
	require.Equal(t, http.StatusOK, f.do(request{path: path, key: key}).status, "control: served before the uninstall")
	missing := f.do(request{path: client.BundlesPath + "/Acme.Nothing/1.0.0", key: key})

	other := newLanding(t, landing.DirVolume(f.root), landing.Options{Replica: "other"})
	gone, err := other.Uninstall(t.Context(), "Acme.Crm")
	require.NoError(t, err)
	newest := "modules/acme.crm/records/" + gone.ID + ".json"
	outage.down.Store(&newest)

	got := f.do(request{path: path, key: key})
	assert.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
	assert.NotEmpty(t, got.header.Get("Retry-After"))

	outage.down.Store(nil)
	got = f.do(request{path: path, key: key})
	assert.Equal(t, missing.status, got.status)
	assert.Equal(t, missing.body, got.body, "the refusal of any missing bundle")
}
