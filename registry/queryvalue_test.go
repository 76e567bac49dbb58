package registry

import (
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/registry/client"
)

// The index route reads ?since= in place; it must read what
// URL.Query().Get reads for every query, plain or not, and refuse the
// queries url.ParseQuery cannot read that mention since (rather than read
// since as absent): 20,000 random queries of since, other keys, empty
// pairs, escapes, bad escapes, '+', ';' and repeated keys, plus queries
// past url's parameter limit with and without since. Control: reading in
// place without the fallback (every query as plain) differs from
// URL.Query on some of them, and some queries are refused.
func TestTheSinceParameterIsReadAsURLQueryReadsIt(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 5))
	parts := []string{client.SinceParam + "=abc", client.SinceParam + "=", client.SinceParam, "x=1", "", "since%3Dq=2",
		client.SinceParam + "=a%20b", client.SinceParam + "=a+b", client.SinceParam + "=%zz", "s%69nce=esc", "a;b=1",
		client.SinceParam + "=first", client.SinceParam + "=0123456789abcdef", "=v", "since=x=y"}
	plain := func(raw string) string {
		for raw != "" {
			var pair string
			pair, raw, _ = strings.Cut(raw, "&")
			if k, v, _ := strings.Cut(pair, "="); k == client.SinceParam {
				return v
			}
		}
		return ""
	}
	differs, refused := 0, 0
	check := func(raw string) {
		u := &url.URL{Path: client.IndexPath, RawQuery: raw}
		vals, perr := url.ParseQuery(raw)
		want := vals.Get(client.SinceParam)
		got, err := queryValue(u, client.SinceParam)
		if perr != nil && (strings.Contains(raw, client.SinceParam) || vals.Has(client.SinceParam)) {
			require.Error(t, err, "query %q", raw)
			refused++
			return
		}
		require.NoError(t, err, "query %q", raw)
		require.Equal(t, want, got, "query %q", raw)
		if plain(raw) != want {
			differs++
		}
	}
	for range 20000 {
		n := 1 + rng.IntN(5)
		q := make([]string, n)
		for i := range q {
			q[i] = parts[rng.IntN(len(parts))]
		}
		check(strings.Join(q, "&"))
	}
	check(strings.Repeat("x=1&", 20000) + client.SinceParam + "=beyond-the-limit")
	check(strings.Repeat("x=1&", 20000) + "y=beyond-the-limit") // no since: read as absent
	assert.Positive(t, differs, "control: reading every query as plain differs from URL.Query")
	assert.Positive(t, refused, "control: some queries mention since and cannot be read")
}

// queryValues counts a key as url.URL.Query counts it (len of its values),
// plain or not: 20,000 random queries of since given zero to five times,
// escaped or not, beside other keys. Control: counting only the plain
// "since" pairs misses the escaped ones on some queries.
func TestQueryValuesCountsTheSinceParameterAsURLQueryCountsIt(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 6))
	parts := []string{client.SinceParam + "=abc", client.SinceParam + "=", client.SinceParam, "x=1", "", "s%69nce=esc",
		client.SinceParam + "=a+b", "since=x=y", "y=%41"}
	missed := 0
	for range 20000 {
		q := make([]string, 1+rng.IntN(5))
		for i := range q {
			q[i] = parts[rng.IntN(len(parts))]
		}
		raw := strings.Join(q, "&")
		vals, err := url.ParseQuery(raw)
		require.NoError(t, err)
		first, n, err := queryValues(&url.URL{RawQuery: raw}, client.SinceParam)
		require.NoError(t, err, "query %q", raw)
		require.Equal(t, len(vals[client.SinceParam]), n, "query %q", raw)
		require.Equal(t, vals.Get(client.SinceParam), first, "query %q", raw)
		plain := 0
		for _, p := range q {
			if k, _, _ := strings.Cut(p, "="); k == client.SinceParam {
				plain++
			}
		}
		if plain != n {
			missed++
		}
	}
	assert.Positive(t, missed, "control: counting the plain pairs alone misses escaped ones")
}

// A poll that gives since twice is refused with 400 through a real server,
// saying so, however the second is spelled, and before authentication
// (no key needed to be told). Negative control: the same query read as
// before (the first value wins, queryValue) names the newest digest, which
// the route answered 304 without a word about the second.
func TestAPollGivingSinceTwiceIsA400SayingSo(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("Acme.Charts", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	_, got := f.index(key)
	digest := strings.Trim(got.header.Get("ETag"), `"`)
	other := strings.Repeat("0", 64)
	one := client.IndexPath + "?" + client.SinceParam + "=" + digest
	require.Equal(t, http.StatusNotModified, f.do(request{path: one, key: key}).status, "control: since given once")
	for _, q := range []string{
		client.SinceParam + "=" + digest + "&" + client.SinceParam + "=" + other,
		client.SinceParam + "=" + digest + "&" + client.SinceParam + "=" + digest,
		client.SinceParam + "=" + digest + "&s%69nce=" + other,
		client.SinceParam + "=" + digest + "&x=1&" + client.SinceParam,
	} {
		for _, k := range []string{key, ""} {
			got := f.do(request{path: client.IndexPath + "?" + q, key: k})
			assert.Equal(t, http.StatusBadRequest, got.status, "query %q: %s", q, got.body)
			assert.Contains(t, string(got.body), client.SinceParam+" is given 2 times", "query %q", q)
		}
		v, err := queryValue(&url.URL{RawQuery: q}, client.SinceParam)
		require.NoError(t, err)
		assert.Equal(t, digest, v, "negative control: the first value, read alone, is the newest digest")
	}
}
