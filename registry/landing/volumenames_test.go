package landing

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every volume refuses a name holding a control character (unicode.IsControl:
// NUL, a line break, DEL…) with an error wrapping fs.ErrInvalid, before any
// I/O, for every operation, and writes nothing. They disagreed: the
// directory refused NUL with the system's EINVAL (not fs.ErrInvalid) and
// wrote the others; the S3 volume wrote them all, and its listing (XML)
// answered NUL and \x01 as U+FFFD — a name that is not there, which a
// RemoveAll of its directory cannot delete. Negative control, run by hand:
// without the check, dir: NUL was EINVAL and the other five names were
// written; s3: every row was written, and walking the volume failed, its
// listing naming a directory "d\uFFFD" that is not there.
func TestEveryVolumeRefusesANameHoldingAControlCharacterAndWritesNothing(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		v := k.openVolume(t)
		for _, bad := range []string{"d/a\x00b", "d/a\x01b", "d/a\nb", "d/a\x7fb", "d\x00/b", "d/a\u0085b"} {
			ops := map[string]func() error{
				"MkdirAll":  func() error { return v.MkdirAll(ctx, bad) },
				"WriteFile": func() error { return v.WriteFile(ctx, bad, []byte("x")) },
				"ReadFile":  func() error { _, err := v.ReadFile(ctx, bad, 10); return err },
				"Stat":      func() error { _, err := v.Stat(ctx, bad); return err },
				"ReadDir":   func() error { _, err := v.ReadDir(ctx, bad); return err },
				"Open":      func() error { _, err := v.Open(ctx, bad); return err },
				"RemoveAll": func() error { return v.RemoveAll(ctx, bad) },
				"Rename to": func() error { return v.Rename(ctx, "d/ok", bad) },
			}
			if sv, ok := v.(StreamingVolume); ok {
				ops["WriteFrom"] = func() error { return sv.WriteFrom(ctx, bad, strings.NewReader("x")) }
			}
			if xv, ok := v.(ExclusiveVolume); ok {
				ops["CreateExclusive"] = func() error { return xv.CreateExclusive(ctx, bad, []byte("x")) }
			}
			for op, call := range ops {
				err := call()
				assert.True(t, errors.Is(err, fs.ErrInvalid), "%s %q: %v", op, bad, err)
			}
		}
		assert.Empty(t, volumeTree(t, v), "nothing written")
		// Control: a name with a space, a '+' and a non-ASCII letter is a name.
		require.NoError(t, v.MkdirAll(ctx, "d"))
		require.NoError(t, v.WriteFile(ctx, "d/a b+ü", []byte("x")))
		assert.Equal(t, []string{"d/", "d/a b+ü"}, volumeTree(t, v))
	})
}
