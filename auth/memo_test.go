package auth

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// resultCache is the negative control's authenticator: a cache of Results
// by header, trusted until evicted — what "make the poll's authentication
// cheap" could carelessly become. It wraps an Authenticator, as a user
// could.
type resultCache struct {
	a    *Authenticator
	mu   sync.Mutex
	kept map[string]Result
}

func (c *resultCache) Authenticate(header string) rx.Observable[Result] {
	c.mu.Lock()
	res, ok := c.kept[header]
	c.mu.Unlock()
	if ok {
		return rx.Return(res)
	}
	return rx.Map(c.a.Authenticate(header), func(res Result) Result {
		c.mu.Lock()
		c.kept[header] = res
		c.mu.Unlock()
		return res
	})
}

type authenticates interface {
	Authenticate(header string) rx.Observable[Result]
}

// Every change to what a key may do is honoured by the first
// authentication that starts after the change is written (visible to a
// read of the mesh), although a warm key skips its index read and reuses
// the decoded instance and grant while their content is unchanged: a key
// revoked (the instance stops listing it, then its index node goes), a key
// revoked whose index node was left behind, an instance disabled, a grant
// narrowed, a key rotated away. Each case authenticates the key three
// times first (the memo holds its instance and both decoded nodes), and
// checks that the memo was in use: the index node was not read. Negative
// control: the same sequence through a cache of Results keeps accepting
// the key after each change.
func TestAChangeToAKeyIsHonouredByTheFirstAuthenticationAfterItIsWritten(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		change func(t *testing.T, f *fixture)
		check  func(t *testing.T, res Result) bool // holds after the change
	}{
		{"revoked", func(t *testing.T, f *fixture) { require.NoError(t, f.reg.RevokeKey(ctx, "acme", f.key)) },
			func(t *testing.T, res Result) bool { return !res.Authenticated() && res.Refused != "" }},
		{"revoked, index node left", func(t *testing.T, f *fixture) {
			_, err := f.reg.update(ctx, "acme", func(inst *Instance) error { inst.KeyHashes = nil; return nil })
			require.NoError(t, err)
		}, func(t *testing.T, res Result) bool { return !res.Authenticated() && res.Refused == RefusedRevokedKey }},
		{"disabled", func(t *testing.T, f *fixture) { require.NoError(t, f.reg.Disable(ctx, "acme")) },
			func(t *testing.T, res Result) bool { return !res.Authenticated() && res.Refused == RefusedDisabled }},
		{"grant narrowed", func(t *testing.T, f *fixture) {
			_, err := f.reg.SetGrant(ctx, "acme", "ops@example.com", "Other/*")
			require.NoError(t, err)
		}, func(t *testing.T, res Result) bool {
			return res.Authenticated() && !res.Allows("Plugins", "charts", "pro") && res.Allows("Other", "x", "")
		}},
		{"rotated", func(t *testing.T, f *fixture) {
			_, err := f.reg.RotateKey(ctx, "acme")
			require.NoError(t, err)
		}, func(t *testing.T, res Result) bool { return !res.Authenticated() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, control := range []bool{false, true} {
				f := newFixture(t)
				var a authenticates = f.authenticator(nil)
				if control {
					a = &resultCache{a: f.authenticator(nil), kept: map[string]Result{}}
				}
				for range 3 {
					res := first(t, a.Authenticate(bearer(f.key)))
					require.True(t, res.Authenticated() && res.Allows("Plugins", "charts", "pro"), "%+v", res)
				}
				if !control {
					before := f.store.gets.Load()
					first(t, a.Authenticate(bearer(f.key)))
					assert.EqualValues(t, 2, f.store.gets.Load()-before, "a warm key reads its instance and its grant, not its index node")
				}
				c.change(t, f)
				res := first(t, a.Authenticate(bearer(f.key)))
				if control {
					assert.False(t, c.check(t, res), "negative control: a cache of Results misses the change (%+v)", res)
					continue
				}
				assert.True(t, c.check(t, res), "the first authentication after the change: %+v", res)
			}
		})
	}
}

// A key the memo names for an instance whose index node now names another
// instance listing it is not held to the memo's instance once that one
// stops listing it: the request runs every leg from the index node, and the
// memo forgets the key. And the memo holds at most memoEntries keys and
// nodes however many authenticate. Control: the entries kept while under
// the bound are all there.
func TestTheMemoFollowsTheIndexWhenItsInstanceDropsTheKeyAndIsBounded(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a := f.authenticator(nil)
	first(t, a.Authenticate(bearer(f.key)))
	hash := HashKey(f.key)
	id, ok := a.memo.instanceOf(hash)
	require.True(t, ok)
	require.Equal(t, "acme", id)

	// The key moves to another instance: listed there, index node there,
	// dropped from acme.
	_, err := f.reg.Register(ctx, "beta", "Beta", "pro")
	require.NoError(t, err)
	_, err = f.reg.update(ctx, "beta", func(inst *Instance) error { inst.KeyHashes = append(inst.KeyHashes, hash); return nil })
	require.NoError(t, err)
	content, err := encodeContent(keyIndexContent{KeyHash: hash, Instance: "beta"})
	require.NoError(t, err)
	_, err = f.store.Put(ctx, mesh.Node{Path: KeyIndexPath(hash), NodeType: KeyIndexNodeType, Content: content})
	require.NoError(t, err)
	_, err = f.reg.update(ctx, "acme", func(inst *Instance) error { inst.KeyHashes = nil; return nil })
	require.NoError(t, err)
	res := first(t, a.Authenticate(bearer(f.key)))
	require.True(t, res.Authenticated(), "%+v", res)
	assert.Equal(t, "beta", res.Instance.ID, "what the index node says now")
	id, _ = a.memo.instanceOf(hash)
	assert.Equal(t, "beta", id)

	var m authMemo
	for i := range 3 * memoEntries {
		m.keepInstance(fmt.Sprint(i), "x")
		if i == memoEntries-1 {
			assert.Len(t, m.instances, memoEntries, "control: every entry under the bound is kept")
		}
	}
	assert.Len(t, m.instances, memoEntries)
}

// The decoded nodes a memo keeps are bounded by their contents' bytes, not
// only by their number: nothing bounds a node's size (an instance may list
// any number of key hashes). Control: under the bound every node is kept;
// without the byte bound it kept 512 MiB (memoEntries nodes of memoNodeBytes).
func TestTheMemoKeepsNoMoreThanItsBytesOfDecodedNodes(t *testing.T) {
	var m authMemo
	content := make([]byte, memoNodeBytes)
	for i := range memoEntries {
		m.keepDecoded(mesh.Node{Path: fmt.Sprint("n/", i), NodeType: "T", Content: content}, i)
		if i == 63 {
			require.Len(t, m.decoded, 64, "control: every node under the bound is kept")
		}
	}
	total := 0
	for _, d := range m.decoded {
		total += len(d.content)
	}
	assert.LessOrEqual(t, total, memoBytes)
	assert.Equal(t, total, m.decodedBytes, "the count follows what is kept")
	_, ok := m.decodedAs(mesh.Node{Path: fmt.Sprint("n/", memoEntries-1), NodeType: "T", Content: content})
	assert.True(t, ok, "the latest node is kept")

	m.keepDecoded(mesh.Node{Path: "big", NodeType: "T", Content: make([]byte, memoNodeBytes+1)}, 0)
	_, ok = m.decoded["big"]
	assert.False(t, ok, "a node larger than memoNodeBytes is not kept")
}
