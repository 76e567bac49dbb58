package landing

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// WriteFrom copies its reader from where the reader stands, on every
// streaming volume: a seekable source already read in part (a spool file
// whose header was taken) writes its rest, as a plain reader does. The S3
// volume uploaded a seekable source from its start whatever its offset,
// where the directory wrote the rest. Negative control, run by hand:
// without the offset in s3volume's WriteFrom, s3 wrote "head:body".
func TestWriteFromCopiesASeekableSourceFromWhereItStands(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		v, sv := streamingVolumeWithDir(t, k, "d")
		for name, src := range map[string]func() io.Reader{
			"seekable": func() io.Reader {
				r := strings.NewReader("head:body")
				_, err := r.Seek(int64(len("head:")), io.SeekStart)
				require.NoError(t, err)
				return r
			},
			"control: a plain reader": func() io.Reader {
				r := strings.NewReader("head:body")
				_, err := io.ReadFull(r, make([]byte, len("head:")))
				require.NoError(t, err)
				return struct{ io.Reader }{r}
			},
		} {
			require.NoError(t, sv.WriteFrom(ctx, "d/f", src()), name)
			got, err := v.ReadFile(ctx, "d/f", 100)
			require.NoError(t, err, name)
			assert.Equal(t, "body", string(got), name)
		}
	})
}

// WriteFrom takes a source that claims to seek but cannot (an *os.File
// on a pipe: its Seek fails) as the stream it is, on every streaming
// volume. The S3 volume refused it ("illegal seek") where the directory
// wrote it. Negative control, run by hand: with the Seek's failure
// returned (as it was), the s3 row failed with "writefrom d/f: seek |0:
// illegal seek".
func TestWriteFromTakesAPipeAsAStreamOnEveryVolume(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		v, sv := streamingVolumeWithDir(t, k, "d")
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		go func() {
			_, _ = io.WriteString(w, "through a pipe")
			_ = w.Close()
		}()
		require.NoError(t, sv.WriteFrom(ctx, "d/f", r))
		got, err := v.ReadFile(ctx, "d/f", 100)
		require.NoError(t, err)
		assert.Equal(t, "through a pipe", string(got))
	})
}

// streamingVolumeWithDir opens k's volume, which streams (every volume of
// the table does), and makes the directory dir on it.
func streamingVolumeWithDir(t *testing.T, k volumeKind, dir string) (Volume, StreamingVolume) {
	t.Helper()
	v := k.openVolume(t)
	sv, ok := v.(StreamingVolume)
	require.True(t, ok, "every volume of the table streams")
	require.NoError(t, v.MkdirAll(t.Context(), dir))
	return v, sv
}
