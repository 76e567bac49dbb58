package registry

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/meshrx/meshrx/registry/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withHost is an index request whose Host header is host.
func (f *fixture) indexWithHost(key, host string) (client.Index, reply) {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.t.Context(), http.MethodGet, f.http.URL+client.IndexPath, nil)
	require.NoError(f.t, err)
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := f.http.Client().Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	var idx client.Index
	require.Equal(f.t, http.StatusOK, resp.StatusCode)
	require.NoError(f.t, json.NewDecoder(resp.Body).Decode(&idx))
	return idx, reply{status: resp.StatusCode, header: resp.Header}
}

func TestRandomHostHeadersNeitherReachTheIndexNorDefeatItsCache(t *testing.T) {
	for _, c := range []struct {
		name, publicURL, prefix string
	}{
		{"relative", "", client.BundlesPath + "/"},
		{"public URL", "https://registry.example.com/", "https://registry.example.com" + client.BundlesPath + "/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) { o.PublicURL = c.publicURL }})
			f.publish("Acme.Crm", "1.2.0", "")
			key := f.instance("acme", "pro", "Plugins/*")
			before := f.server.index.assemblies.Load()
			etags := map[string]bool{}
			for i := range 300 {
				host := fmt.Sprintf("evil-%d.example", i)
				idx, got := f.indexWithHost(key, host)
				require.Len(t, idx.Bundles, 1)
				assert.Equal(t, c.prefix+"Acme.Crm/1.2.0", idx.Bundles[0].URL)
				assert.NotContains(t, idx.Bundles[0].URL, "evil", "the Host header never reaches a link")
				etags[got.header.Get("ETag")] = true
			}
			assert.Equal(t, int64(1), f.server.index.assemblies.Load()-before, "300 Hosts, one build")
			assert.Len(t, etags, 1)

			// Control: the cache key does separate what differs: another
			// entitlement is another build.
			other := f.instance("other", "free", "Plugins/Acme.Crm")
			f.indexWithHost(other, "evil-0.example")
			assert.Equal(t, int64(2), f.server.index.assemblies.Load()-before, "another entitlement is another document")
		})
	}
}

func TestAPublicURLThatIsNotAnAbsoluteHTTPURLIsRefused(t *testing.T) {
	for _, bad := range []string{"registry.example.com", "ftp://r.example", "https://", "https://u:p@r.example", "https://r.example/?q=1", "https://r.example/#x"} {
		_, err := publicURL(bad)
		var ce *ConfigError
		require.ErrorAs(t, err, &ce, bad)
		assert.Equal(t, "ServerOptions.PublicURL", ce.Setting)
	}
	got, err := publicURL(" https://r.example/base/ ")
	require.NoError(t, err)
	assert.Equal(t, "https://r.example/base", got)
	assert.False(t, strings.HasSuffix(got, "/"))
}
