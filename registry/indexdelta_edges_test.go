package registry

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/registry/client"
)

// The digest covers what the consumer holds at the edges too: an index
// taken down to one entry, to none (the last entry removed), and back to
// one and two, each by one delta the client verifies (no whole index after
// the first), each ending with the whole request's document. Control: the
// deltas carry the changes (each step's listing differs from the last).
func TestTheClientFollowsAnIndexDownToNoEntryAndBackThroughDeltas(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	f.publish("B", "1.0.0", "")
	key := f.instance("acme", "free", "Plugins/*")
	c, counted := f.consumer(key)
	_, tag, err := indexVia(t, c, "")
	require.NoError(t, err)
	prev := map[string]string{"A": "1.0.0", "B": "1.0.0"}
	for _, s := range []struct {
		name   string
		change func()
		want   map[string]string
	}{
		{"B hidden: one entry", func() { f.putPackage(packageNode("B", `{"tier":"pro"}`)) }, map[string]string{"A": "1.0.0"}},
		{"A hidden: no entry", func() { f.putPackage(packageNode("A", `{"tier":"pro"}`)) }, map[string]string{}},
		{"A shown: one entry", func() { f.putPackage(packageNode("A", `{"tier":""}`)) }, map[string]string{"A": "1.0.0"}},
		{"B shown: two", func() { f.putPackage(packageNode("B", `{"tier":""}`)) }, map[string]string{"A": "1.0.0", "B": "1.0.0"}},
	} {
		s.change()
		idx, got, err := indexVia(t, c, tag)
		require.NoError(t, err, s.name)
		tag = got
		whole, at := f.index(key)
		assert.Equal(t, s.want, listed(idx), s.name)
		assert.NotEqual(t, prev, listed(idx), "control, %s: the delta changed the index", s.name)
		assert.Equal(t, listed(whole), listed(idx), s.name)
		assert.Equal(t, at.header.Get("ETag"), tag, s.name)
		prev = listed(idx)
	}
	deltas, fulls := counted.requests()
	assert.Equal(t, [2]int64{4, 1}, [2]int64{deltas, fulls})
}

// A since parameter that is not a digest (negative, huge, short, long, not
// hex, quoted, weak, an integer generation) is a 400 with a JSON error
// through the real server, never a panic or a dropped connection, and the
// server answers the next request. Controls: the same digest in capitals
// (hex decodes it) and as given is a 304.
func TestAMalformedSinceIsA400WithAnErrorAndTheServerGoesOn(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	key := f.instance("acme", "free", "Plugins/*")
	_, at := f.index(key)
	digest := strings.Trim(at.header.Get("ETag"), `"`)
	for _, bad := range []string{
		"-1", "0", "18446744073709551616", "-" + digest[1:], digest[:63], digest + "0", digest[:63] + "g",
		"%22" + digest + "%22", "W/%22" + digest + "%22", "0x" + digest[2:], strings.Repeat("f", 1<<16),
		digest[:32] + "%00" + digest[33:], "%20" + digest[1:], "+" + digest[1:],
	} {
		got := f.do(request{path: client.IndexPath + "?" + client.SinceParam + "=" + bad, key: key})
		require.NoError(t, got.err, "since=%.40s", bad)
		assert.Equal(t, http.StatusBadRequest, got.status, "since=%.40s: %s", bad, got.body)
		var body struct{ Error string }
		assert.NoError(t, json.Unmarshal(got.body, &body), "since=%.40s: %s", bad, got.body)
		assert.NotEmpty(t, body.Error, "since=%.40s", bad)
	}
	// Only the syntax is judged before authentication: a malformed since
	// without a key is a 400, a well-formed one a 401 (nothing looked up).
	assert.Equal(t, http.StatusBadRequest, f.do(request{path: since("-1")}).status, "malformed, no key")
	assert.Equal(t, http.StatusUnauthorized, f.do(request{path: since(digest)}).status, "well-formed, no key")
	for _, good := range []string{digest, strings.ToUpper(digest)} {
		assert.Equal(t, http.StatusNotModified, f.do(request{path: since(good), key: key}).status, "control: since=%s", good)
	}
}
