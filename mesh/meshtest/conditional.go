package meshtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// conditionalWrites: PutIfVersion writes only at the version the writer
// read, refuses anything else with a *mesh.VersionConflictError that
// writes nothing, and of concurrent writers from one version exactly one
// lands, so read-modify-write loops lose no update.
func (s *suite) conditionalWrites(t testing.TB, svc mesh.Store) {
	ctx := writeContext(t)
	const path = "acme/Cas/counter"
	conflict := func(err error, expected, actual int64, what string) {
		t.Helper()
		var c *mesh.VersionConflictError
		if assert.ErrorAs(t, err, &c, "%s is a *mesh.VersionConflictError", what) {
			assert.Equal(t, path, c.Path)
			assert.Equal(t, expected, c.Expected, "%s: the version expected", what)
			assert.Equal(t, actual, c.Actual, "%s: the version found", what)
		}
	}
	content := func(n mesh.Node) string {
		t.Helper()
		return string(firstOf(t, s.bound, "get "+n.Path, svc.Get(n.Path)).Content)
	}

	created, err := svc.PutIfVersion(ctx, withContent(node(path, "Counter"), `{"n":0}`), 0)
	require.NoError(t, err, "expecting no node writes a new one")
	require.EqualValues(t, 1, created.Version)

	_, err = svc.PutIfVersion(ctx, withContent(node(path, "Counter"), `{"n":100}`), 0)
	conflict(err, 0, 1, "creating a node that exists")
	assert.JSONEq(t, `{"n":0}`, content(created), "a refused conditional write writes nothing")

	next, err := svc.PutIfVersion(ctx, withContent(node(path, "Counter"), `{"n":1}`), created.Version)
	require.NoError(t, err, "a write at the version read lands")
	assert.Greater(t, next.Version, created.Version)

	_, err = svc.PutIfVersion(ctx, withContent(node(path, "Counter"), `{"n":2}`), created.Version)
	conflict(err, created.Version, next.Version, "a stale expected version")
	assert.JSONEq(t, `{"n":1}`, content(next), "a stale expected version is refused and writes nothing")

	same, err := svc.PutIfVersion(ctx, withContent(node(path, "Counter"), `{ "n": 1 }`), next.Version)
	require.NoError(t, err, "a no-op at the expected version succeeds")
	assert.Equal(t, next.Version, same.Version, "a no-op keeps the version")

	_, err = svc.PutIfVersion(ctx, withContent(node(path, "Counter"), `{"n":1}`), -1)
	var nodeErr *mesh.NodeError
	assert.ErrorAs(t, err, &nodeErr, "a negative expected version is a *mesh.NodeError")

	del(t, svc, path)
	_, err = svc.PutIfVersion(ctx, withContent(node(path, "Counter"), `{"n":9}`), next.Version)
	conflict(err, next.Version, 0, "expecting a version of a deleted node")

	// Concurrent read-modify-write: each writer adds one, rereading on a
	// conflict. A store whose condition is not atomic loses increments.
	const writers, increments = 6, 5
	put(t, svc, withContent(node(path, "Counter"), `{"n":0}`))
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for range increments {
				if err := increment(ctx, s, svc, path); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var final struct{ N int }
	got := firstOf(t, s.bound, "get "+path, svc.Get(path))
	require.NoError(t, json.Unmarshal(got.Content, &final))
	assert.Equal(t, writers*increments, final.N, "no increment is lost among %d concurrent conditional writers", writers)
}

// maxIncrementAttempts bounds one increment's retries on conflict: every
// conflict means another writer's increment landed, so a writer can lose
// at most (writers-1)*increments races.
const maxIncrementAttempts = 64

// increment adds one to the counter at path with a compare-and-set loop.
func increment(ctx context.Context, s *suite, svc mesh.Store, path string) error {
	for range maxIncrementAttempts {
		cur, err := firstErr(s.bound, svc.Get(path))
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		var c struct{ N int }
		if err := json.Unmarshal(cur.Content, &c); err != nil {
			return err
		}
		_, err = svc.PutIfVersion(ctx, withContent(node(path, "Counter"), fmt.Sprintf(`{"n":%d}`, c.N+1)), cur.Version)
		var conflict *mesh.VersionConflictError
		if errors.As(err, &conflict) {
			continue
		}
		return err
	}
	return fmt.Errorf("incrementing %s: %d conflicts in a row", path, maxIncrementAttempts)
}
