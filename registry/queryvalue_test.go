package registry

import (
	"math/rand/v2"
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
