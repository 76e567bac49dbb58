package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/registry/client"
)

// Two replicas that share nothing but a PostgreSQL database and a bucket
// (-volume s3://…, on an S3-protocol server the test starts): the second
// start prints the key the first printed (kept on the volume, not in a
// data directory), a publication through one is listed by the other, and
// of two publications of one version with other bytes, one through each,
// exactly one lands. Control: without the kept key (a first start of a
// replica on another bucket of the same database) a start issues a new key.
func TestTwoReplicasSharingOnlyTheDatabaseAndABucketServeOneRegistry(t *testing.T) {
	for _, kv := range s3test.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	srv := s3test.Start(t)
	dbURL := pg.Database(t)
	a := start(t, hooks{}, "-pg", dbURL, "-volume", srv.VolumeURL("shared"))
	b := start(t, hooks{}, "-pg", dbURL, "-volume", srv.VolumeURL("shared"))
	assert.Empty(t, a.data+b.data, "neither replica has a data directory")
	require.Equal(t, a.key, b.key, "the second replica prints the key the first kept on the bucket")

	archive, err := demoBundle(demoPackage{name: "Demo.Hello", version: "1.1.0"})
	require.NoError(t, err)
	resp, body := a.do(t, http.MethodPost, client.BundlesPath+"/Demo.Hello?version=1.1.0", "Bearer "+a.token, nil, archive)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", body)
	require.Eventually(t, func() bool {
		resp, body := b.do(t, http.MethodGet, client.IndexPath, "Bearer "+b.key, nil, nil)
		var idx client.Index
		return resp.StatusCode == http.StatusOK && json.Unmarshal(body, &idx) == nil && versionOf(idx, "Demo.Hello") == "1.1.0"
	}, bound, 20*time.Millisecond, "replica b lists a's publication")

	// One version, other bytes, through each replica at once.
	statuses := make([]int, 2)
	var wg sync.WaitGroup
	for i, r := range []*started{a, b} {
		wg.Go(func() {
			bundle, err := demoBundle(demoPackage{name: "Demo.Race", version: "1.0.0", tier: []string{"free", "pro"}[i]})
			assert.NoError(t, err)
			resp, _ := r.do(t, http.MethodPost, client.BundlesPath+"/Demo.Race?version=1.0.0&tier=free", "Bearer "+r.token, nil, bundle)
			statuses[i] = resp.StatusCode
		})
	}
	wg.Wait()
	assert.ElementsMatch(t, []int{http.StatusCreated, http.StatusConflict}, statuses, "exactly one publication lands")

	other := start(t, hooks{}, "-pg", dbURL, "-volume", srv.VolumeURL("elsewhere"))
	assert.NotEqual(t, a.key, other.key, "control: a start without the kept key issues a new one")
}

func versionOf(idx client.Index, plugin string) string {
	for _, b := range idx.Bundles {
		if b.Plugin == plugin {
			return b.Version
		}
	}
	return ""
}
