package registry

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
)

// bytesReadVolume counts the bytes read through the files it opens: what a
// download costs the volume (an object store's egress).
type bytesReadVolume struct {
	landing.Volume
	read *atomic.Int64
}

func (v bytesReadVolume) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, err := v.Volume.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return countedReader{rc, v.read}, nil
}

type countedReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r countedReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}

func TestAHeadOfABundleAnswersItsHeadersWithoutReadingItsBytes(t *testing.T) {
	read := new(atomic.Int64)
	f := newFixture(t, fixtureOptions{volume: func(v landing.Volume) landing.Volume { return bytesReadVolume{v, read} }})
	key := f.instance("acme", "pro", "Plugins/*")
	rec, archive := f.publish("Acme.Crm", "1.0.0", "")
	path := client.BundlesPath + "/Acme.Crm/1.0.0"

	before := read.Load()
	head := f.do(request{method: http.MethodHead, path: path, key: key})
	assert.Equal(t, http.StatusOK, head.status)
	assert.Equal(t, strconv.Itoa(len(archive)), head.header.Get("Content-Length"))
	assert.Equal(t, rec.SHA256, head.header.Get(client.BundleDigestHeader))
	assert.Equal(t, `"`+rec.SHA256+`"`, head.header.Get("ETag"))
	assert.Zero(t, read.Load()-before, "a HEAD reads none of the bundle's bytes")

	// Control: a GET answers the same headers and reads the bundle whole
	// (so the count above would have seen a HEAD that read it).
	before = read.Load()
	get := f.do(request{path: path, key: key})
	require.Equal(t, http.StatusOK, get.status)
	assert.Equal(t, archive, get.body)
	for _, h := range []string{"Content-Length", "Content-Type", "ETag", client.BundleDigestHeader, "Content-Disposition"} {
		assert.Equal(t, get.header.Get(h), head.header.Get(h), h)
	}
	assert.Equal(t, int64(len(archive)), read.Load()-before)

	// A HEAD the caller may not have is refused as a GET is.
	other := f.instance("other", "free")
	assert.Equal(t, http.StatusNotFound, f.do(request{method: http.MethodHead, path: path, key: other}).status)
	// Negative control (run): before the fix a HEAD streamed the whole
	// bundle from the volume into net/http, which drops a HEAD's body: 310
	// bytes read here, a 64 MiB object store GET for the largest bundle,
	// for a request whose answer is a few headers.
}
