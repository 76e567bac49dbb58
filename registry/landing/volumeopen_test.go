package landing

import (
	"context"
	"io"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Open of a missing file is fs.ErrNotExist on every volume, as ReadFile
// and Stat are, and neither an outage nor a time-out. The S3 volume
// answered every failed Open (404, and a 403 alike) with "no answer within
// the call budget (30s)", context.DeadlineExceeded and IsUnavailable: it
// ended its request's context before asking whether the budget had run
// out. A bundle whose object was missing was served 503 naming a wait that
// never happened. Negative control, run by hand: with the cancel before
// mapErr (as it was), the s3 row failed with that message.
func TestOpeningAMissingFileIsNotExistOnEveryVolume(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		v := k.openVolume(t)
		require.NoError(t, v.MkdirAll(ctx, "d"))
		require.NoError(t, v.WriteFile(ctx, "d/here", []byte("x")))
		_, err := v.Open(ctx, "d/missing")
		assert.ErrorIs(t, err, fs.ErrNotExist)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		assert.False(t, IsUnavailable(err), "%v", err)
		_, err = v.ReadFile(ctx, "d/missing", 10)
		assert.ErrorIs(t, err, fs.ErrNotExist, "ReadFile agrees")

		f, err := v.Open(ctx, "d/here")
		require.NoError(t, err, "control: a file that is there opens")
		got, err := io.ReadAll(f)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		assert.Equal(t, "x", string(got))
	})
}
