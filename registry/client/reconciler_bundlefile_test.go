package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// A bundle being checked and applied has no name in TempDir: a consumer
// killed mid-download or mid-Apply (a crash, an OOM kill, a deploy) left
// its meshrx-bundle-* file, up to MaxBundleBytes, in TempDir for good, and
// a crash-looping consumer filled the disk. Negative control, run by hand:
// without the os.Remove right after os.CreateTemp in install, Apply sees
// [meshrx-bundle-…] in TempDir and the test fails.
func TestABundleBeingAppliedLeavesNoFileInTempDirForACrashToLeaveBehind(t *testing.T) {
	reg := newFakeRegistry(t)
	crm := testkit.RandomBytes(4 << 10)
	reg.publish("Acme.Crm", "1.0.0", crm, "")
	dir := t.TempDir()
	var during []string
	u := runReconciler(t, reg, func(r *Reconciler) {
		r.TempDir = dir
		apply := r.Apply
		r.Apply = func(ctx context.Context, e IndexEntry, bundle io.Reader) error {
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, de := range entries {
				during = append(during, de.Name())
			}
			return apply(ctx, e, bundle)
		}
	})

	st := testkit.Receive(t, u.polls, "the first poll")
	assert.True(t, st.Healthy, st.LastError)
	assert.Equal(t, crm, testkit.Receive(t, u.applied, "the bundle").body, "Apply still reads the whole, verified bundle")
	assert.Empty(t, during, "files in TempDir while the bundle was applied")
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left, "files in TempDir after the poll")
}

// A bundle whose Content-Length declares more than MaxBundleBytes is
// refused with a *BundleSizeError before its body is read, and the rest of
// the index is applied: before, the Reconciler read MaxBundleBytes+1 bytes
// (256 MiB by default) into TempDir to find out, every poll, and a body
// that then stalled held the poll for the whole download timeout.
// Negative control, run by hand: without the declared-size check in
// install, the poll waits on the stalled body and the test's bounded wait
// for the first poll trips.
func TestABundleDeclaringMoreThanMaxBundleBytesIsRefusedBeforeItsBodyIsRead(t *testing.T) {
	const limit = 1 << 10
	small := testkit.RandomBytes(limit)
	digest := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	idx := Index{Bundles: []IndexEntry{
		{Plugin: "Acme.Big", Version: "1.0.0", SHA256: digest([]byte("whatever"))},
		{Plugin: "Acme.Small", Version: "1.0.0", SHA256: digest(small)},
	}}
	srv := newScriptedRegistry(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case IndexPath:
			writeIndex(w, "", idx)
		case BundlesPath + "/Acme.Small/1.0.0":
			_, _ = w.Write(small)
		default:
			w.Header().Set("Content-Length", strconv.Itoa(limit+1))
			_, _ = w.Write([]byte("PK"))
			w.(http.Flusher).Flush()
			<-r.Context().Done() // the rest never comes
		}
	})
	u := runReconciler(t, &fakeRegistry{srv: srv}, func(r *Reconciler) {
		r.MaxBundleBytes = limit
	})

	st := testkit.Receive(t, u.polls, "the first poll")
	assert.False(t, st.Healthy)
	assert.Equal(t, map[string]string{"Acme.Small": "1.0.0"}, st.Applied, "the rest of the index is applied")
	assert.Equal(t, "Acme.Small", testkit.Receive(t, u.applied, "the small bundle").entry.Plugin)
	u.noApply(t, "the oversized bundle is not applied")
	assert.Contains(t, st.LastError, "Acme.Big@1.0.0")
	assert.Contains(t, st.LastError, "1024 bytes")
}

// A bundle that turns out larger than MaxBundleBytes while it is read (sent
// chunked, with no Content-Length) is refused with a *BundleSizeError too.
func TestABundleLargerThanMaxBundleBytesIsRefusedWithABundleSizeError(t *testing.T) {
	const limit = 4 << 10 // over net/http's 2 KiB, so the body is sent chunked
	reg := newFakeRegistry(t)
	reg.publish("Acme.Big", "1.0.0", testkit.RandomBytes(limit+1), "")
	u := newReconcilerUnderTest(t, reg, func(r *Reconciler) { r.MaxBundleBytes = limit })
	cfg, err := u.r.config()
	require.NoError(t, err)

	err = u.r.install(boundedContext(t), cfg, reg.index.Bundles[0])
	var se *BundleSizeError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, BundleSizeError{Plugin: "Acme.Big", Version: "1.0.0", Limit: limit, Declared: -1}, *se)

	// Control: at the limit it is applied.
	reg.publish("Acme.Big", "1.0.1", testkit.RandomBytes(limit), "")
	require.NoError(t, u.r.install(boundedContext(t), cfg, reg.index.Bundles[0]))
}
