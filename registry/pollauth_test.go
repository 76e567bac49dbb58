package registry

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/rx"
)

// cachedResults is the negative control's authenticator: the server's
// authenticator behind a cache of Results by header — a poll's
// authentication made cheap the careless way.
type cachedResults struct {
	next Authenticator
	mu   sync.Mutex
	kept map[string]auth.Result
}

func (c *cachedResults) Authenticate(header string) rx.Observable[auth.Result] {
	c.mu.Lock()
	res, ok := c.kept[header]
	c.mu.Unlock()
	if ok {
		return rx.Return(res)
	}
	return rx.Map(c.next.Authenticate(header), func(res auth.Result) auth.Result {
		c.mu.Lock()
		c.kept[header] = res
		c.mu.Unlock()
		return res
	})
}

// A consumer polling the index (deltas, as registry/client does) through a
// real server is refused by its first poll after its key is revoked, and
// its first poll after its grant is narrowed is a 410 (another
// entitlement, whose history does not hold its document) and the whole
// index it then fetches no longer lists what the grant took away, though its earlier polls warmed the authenticator's
// memo (the key's instance, its decoded instance and grant). Negative
// control: the same polls through a cache of Results keep answering the
// revoked key, and keep listing what the narrowed grant took away.
func TestAPollAfterARevocationOrAGrantChangeIsRefusedOrNarrowed(t *testing.T) {
	for _, control := range []bool{false, true} {
		fo := fixtureOptions{}
		if control {
			fo.server = func(o *ServerOptions) { o.Auth = &cachedResults{next: o.Auth, kept: map[string]auth.Result{}} }
		}
		f := newFixture(t, fo)
		f.publish("Acme.Charts", "1.0.0", "")
		f.publish("Other.Tool", "1.0.0", "")
		key := f.instance("acme", "pro", "Plugins/*")
		etag := ""
		poll := func() reply {
			path := client.IndexPath
			if etag != "" {
				path += "?" + client.SinceParam + "=" + strings.Trim(etag, `"`)
			}
			got := f.do(request{path: path, key: key})
			if got.status == http.StatusOK {
				etag = got.header.Get("ETag")
			}
			return got
		}
		for range 3 {
			got := poll()
			require.Contains(t, []int{http.StatusOK, http.StatusNotModified}, got.status, "%s", got.body)
		}
		idx, _ := f.index(key)
		require.Contains(t, listed(idx), "Other.Tool")

		_, err := f.reg.SetGrant(t.Context(), "acme", "test", "Plugins/Acme.Charts")
		require.NoError(t, err)
		got := poll()
		idx, whole := f.index(key)
		etag = whole.header.Get("ETag")
		if control {
			assert.Contains(t, listed(idx), "Other.Tool", "negative control: a cache of Results keeps the old grant")
		} else {
			// Another entitlement, whose history does not hold the
			// document the consumer has: 410, and the whole index.
			require.Equal(t, http.StatusGone, got.status, "the first poll after the grant change: %s", got.body)
			assert.Equal(t, map[string]string{"Acme.Charts": "1.0.0"}, listed(idx))
		}

		require.NoError(t, f.reg.RevokeKey(t.Context(), "acme", key))
		got = poll()
		if control {
			assert.NotEqual(t, http.StatusUnauthorized, got.status, "negative control: a cache of Results answers the revoked key")
			continue
		}
		assert.Equal(t, http.StatusUnauthorized, got.status, "the first poll after the revocation: %s", got.body)
	}
}

// authStore is the authenticator's store with its point reads counted
// and, when frozen, its security version held at at: what a kept decision
// would be on a store that did not move it on the writes an
// authentication reads (the negative control below).
type authStore struct {
	*memstore.Store
	gets   atomic.Int64
	frozen bool
	at     mesh.SecurityVersion
}

func (s *authStore) Get(path string) rx.Observable[mesh.Node] {
	s.gets.Add(1)
	return s.Store.Get(path)
}

func (s *authStore) SecurityVersion(ctx context.Context) (mesh.SecurityVersion, error) {
	if s.frozen {
		return s.at, nil
	}
	return s.Store.SecurityVersion(ctx)
}

// The same through a real server on a store that gates the
// authentication's node types (as examples/registry and examples/loadtest
// open theirs), where a warm poll is answered from the decision the
// authenticator kept for the key, without reading its instance or grant:
// the first poll after the grant is narrowed is a 410 and the whole index
// no longer lists what the grant took away, and the first poll after the
// key is revoked is a 401. Negative control: the same polls with the
// store's security version frozen keep listing what the grant took away
// and keep answering the revoked key.
func TestAPollAnsweredFromAKeptDecisionIsRefusedOrNarrowedByTheFirstPollAfterTheChange(t *testing.T) {
	for _, control := range []bool{false, true} {
		var as *authStore
		f := pollFixture(t, true, func(s *memstore.Store) mesh.Store {
			as = &authStore{Store: s}
			return as
		})
		f.publish("Acme.Charts", "1.0.0", "")
		f.publish("Other.Tool", "1.0.0", "")
		key := f.instance("acme", "pro", "Plugins/*")
		etag := ""
		poll := func() reply {
			path := client.IndexPath
			if etag != "" {
				path += "?" + client.SinceParam + "=" + strings.Trim(etag, `"`)
			}
			got := f.do(request{path: path, key: key})
			if got.status == http.StatusOK {
				etag = got.header.Get("ETag")
			}
			return got
		}
		if control {
			v, err := as.Store.SecurityVersion(t.Context())
			require.NoError(t, err)
			as.at, as.frozen = v, true
		}
		for range 3 {
			got := poll()
			require.Contains(t, []int{http.StatusOK, http.StatusNotModified}, got.status, "%s", got.body)
		}
		gets := as.gets.Load()
		got := poll()
		require.Equal(t, http.StatusNotModified, got.status)
		require.Equal(t, gets, as.gets.Load(), "a warm poll reads no node")

		_, err := f.reg.SetGrant(t.Context(), "acme", "test", "Plugins/Acme.Charts")
		require.NoError(t, err)
		got = poll()
		idx, whole := f.index(key)
		etag = whole.header.Get("ETag")
		if control {
			assert.Contains(t, listed(idx), "Other.Tool", "negative control: a frozen version keeps the old grant")
		} else {
			require.Equal(t, http.StatusGone, got.status, "the first poll after the grant change: %s", got.body)
			assert.Equal(t, map[string]string{"Acme.Charts": "1.0.0"}, listed(idx))
		}

		require.NoError(t, f.reg.RevokeKey(t.Context(), "acme", key))
		got = poll()
		if control {
			assert.NotEqual(t, http.StatusUnauthorized, got.status, "negative control: a frozen version answers the revoked key")
			continue
		}
		assert.Equal(t, http.StatusUnauthorized, got.status, "the first poll after the revocation: %s", got.body)
	}
}

// stallingAuthStore is the authenticator's store, wrapped as a user may:
// when stalled, its security version and its point reads wait for their
// context to end; versionEntered is told of each stalled version read,
// whose bound is armed by then.
type stallingAuthStore struct {
	*memstore.Store
	stalled        atomic.Bool
	versionEntered chan struct{}
}

func (s *stallingAuthStore) Get(path string) rx.Observable[mesh.Node] {
	if s.stalled.Load() {
		return rx.Never[mesh.Node]()
	}
	return s.Store.Get(path)
}

func (s *stallingAuthStore) SecurityVersion(ctx context.Context) (mesh.SecurityVersion, error) {
	if s.stalled.Load() {
		s.versionEntered <- struct{}{}
		<-ctx.Done()
		return mesh.SecurityVersion{}, ctx.Err()
	}
	return s.Store.SecurityVersion(ctx)
}

// A poll whose kept decision's version read stalls is refused at
// arrival+IndexBudget, through a real server on virtual time: the version
// read is bounded by what is left of the route's budget, and the route's
// deadline counts the time the route spent in it before returning the
// legs' stream (the authenticator's ReadBudget, 30s, is longer than the
// route's budget, so only the route's budget can end the wait). Negative
// control (run): with answer.Deadline counting what is left before the
// route was asked (as in 153d556), the legs got a whole IndexBudget more
// and no reply came at arrival+IndexBudget (the bounded receive failed).
func TestAPollWhoseVersionReadStallsIsRefusedAtArrivalPlusTheRouteBudget(t *testing.T) {
	store, err := memstore.New(memstore.Options{GatedTypes: append(auth.SecurityTypes(), auth.DecisionTypes()...)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	as := &stallingAuthStore{Store: store, versionEntered: make(chan struct{}, 1)}
	f := newFixture(t, fixtureOptions{store: store, server: func(o *ServerOptions) {
		o.Auth = &auth.Authenticator{Mesh: as, Clock: o.Clock, ReadBudget: 30 * time.Second}
	}})
	f.publish("Acme.Charts", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	for range 2 { // the second keeps the decision
		f.index(key)
	}

	as.stalled.Store(true)
	replies := f.send(request{path: client.IndexPath, key: key})
	testkit.Receive(t, as.versionEntered, "the poll reading the security version")
	f.clk.Advance(IndexBudget)
	got := testkit.Receive(t, replies, "the refusal at arrival+IndexBudget")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
}
