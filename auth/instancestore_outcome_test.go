package auth

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// outcomeUnknown is a mesh (a wrapper, as a user could write one) whose
// next compare-and-set of one path fails with mesh.ErrOutcomeUnknown, after
// applying the write (the answer was lost) or without applying it (the
// write was cut off): the two things such an error may mean.
type outcomeUnknown struct {
	*faultStore
	path  string
	apply bool
	armed atomic.Bool
}

func (s *outcomeUnknown) PutIfVersion(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	if n.Path != s.path || !s.armed.CompareAndSwap(true, false) {
		return s.faultStore.PutIfVersion(ctx, n, expected)
	}
	if s.apply {
		if _, err := s.faultStore.PutIfVersion(ctx, n, expected); err != nil {
			return mesh.Node{}, err
		}
	}
	return mesh.Node{}, &mesh.UnavailableError{Op: "put " + n.Path, Err: fmt.Errorf("the answer was lost: %w", mesh.ErrOutcomeUnknown)}
}

// A key issue or rotation whose instance update has an unknown outcome
// (mesh.ErrOutcomeUnknown) is neither a failure nor a success: the key's
// index node is kept, and the instance read again decides. If the update
// was applied, the key is handed out and authenticates (a rotation also
// drops the replaced keys); if it was not, the error says the outcome is
// unknown and the instance lists no new hash.
//
// Negative control (run): with issue dropping the index node on any update
// error (as before), the applied rows failed "the update was applied: the
// key is issued" (no key handed out, though the instance lists its hash)
// and the not-applied rows failed "the new key's index node stays".
func TestAKeyIssueWhoseInstanceUpdateHasAnUnknownOutcomeKeepsItsIndexAndReadsTheInstanceToDecide(t *testing.T) {
	for _, c := range []struct {
		name          string
		rotate, apply bool
	}{
		{"issue applied", false, true}, {"issue not applied", false, false},
		{"rotate applied", true, true}, {"rotate not applied", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			store := &outcomeUnknown{faultStore: f.store, path: InstancePath("acme"), apply: c.apply}
			reg := &Instances{Mesh: store, Clock: f.clk}
			a := f.authenticator(nil)
			authenticated := func(key string) bool { return first(t, a.Authenticate(bearer(key))).Authenticated() }
			before, err := reg.Instance(ctx, "acme")
			require.NoError(t, err)
			indexes := func() (n int) {
				for _, node := range everyNode(t, f.store) {
					if node.NodeType == KeyIndexNodeType {
						n++
					}
				}
				return n
			}
			indexesBefore := indexes()

			store.armed.Store(true)
			var key string
			if c.rotate {
				key, err = reg.RotateKey(ctx, "acme")
			} else {
				key, err = reg.IssueKey(ctx, "acme")
			}
			require.False(t, store.armed.Load(), "the instance update met the unknown outcome")
			after, rerr := reg.Instance(ctx, "acme")
			require.NoError(t, rerr)

			if c.apply {
				require.NoError(t, err, "the update was applied: the key is issued")
				assert.True(t, authenticated(key), "the key handed out authenticates")
				hash := HashKey(key)
				_, indexed, rerr := reg.read(ctx, "instance key", KeyIndexPath(hash))
				require.NoError(t, rerr)
				assert.True(t, indexed, "the index node of the listed hash stays")
				if c.rotate {
					assert.Equal(t, []string{hash}, after.KeyHashes)
					assert.False(t, authenticated(f.key), "the replaced key is revoked")
					_, oldIndexed, rerr := reg.read(ctx, "instance key", KeyIndexPath(HashKey(f.key)))
					require.NoError(t, rerr)
					assert.False(t, oldIndexed, "the replaced key's index node goes")
				} else {
					assert.Equal(t, append(before.KeyHashes, hash), after.KeyHashes)
					assert.True(t, authenticated(f.key), "issuing adds a key")
				}
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, mesh.ErrOutcomeUnknown, "not applied as far as the read shows, but it may still land")
			assert.Empty(t, key)
			assert.Equal(t, before.KeyHashes, after.KeyHashes, "no new hash listed")
			assert.True(t, authenticated(f.key), "the existing key still authenticates")
			assert.Equal(t, indexesBefore+1, indexes(), "the new key's index node stays: the update may still land")
		})
	}
}

// cancelOnUnknown is outcomeUnknown whose lost answer also ends the
// caller's context (the caller gives up as the write's outcome becomes
// unknown) and stalls every later read of the path.
type cancelOnUnknown struct {
	*outcomeUnknown
	cancel context.CancelFunc
}

func (s *cancelOnUnknown) PutIfVersion(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	armed := n.Path == s.path && s.armed.Load()
	out, err := s.outcomeUnknown.PutIfVersion(ctx, n, expected)
	if armed {
		s.faultStore.stall(s.path) // the read-back would never answer
		s.cancel()
	}
	return out, err
}

// A key issue whose caller gives up as the instance update's outcome
// becomes unknown returns at once with that outcome (and the caller's
// context error): the instance is not read back on a context that cannot
// end, so a stalled read does not hold the caller for the read's budget.
//
// Negative control (run): with the read-back on context.WithoutCancel(ctx)
// (as in 48065cd), IssueKey did not return within the real bound below
// ("IssueKey returned once its context ended").
func TestAKeyIssueWhoseCallerGaveUpAsTheOutcomeBecameUnknownReturnsAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &cancelOnUnknown{outcomeUnknown: &outcomeUnknown{faultStore: f.store, path: InstancePath("acme"), apply: false}, cancel: cancel}
	reg := &Instances{Mesh: store, Clock: f.clk}
	store.armed.Store(true)
	type result struct {
		key string
		err error
	}
	done := make(chan result, 1)
	go func() {
		key, err := reg.IssueKey(ctx, "acme")
		done <- result{key, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		// Release the stalled read (its budget, on the virtual clock) so no
		// goroutine is left behind, then fail.
		f.clk.Advance(DefaultReadBudget + time.Second)
		r = <-done
		t.Fatalf("IssueKey returned once its context ended: it waited on the read-back until its budget (%v)", r.err)
	}
	require.False(t, store.armed.Load(), "the instance update met the unknown outcome")
	assert.ErrorIs(t, r.err, mesh.ErrOutcomeUnknown)
	assert.ErrorIs(t, r.err, context.Canceled)
	assert.Empty(t, r.key)
}
