package landing

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestADirVolumeRefusesNamesThatEscapeItsRoot(t *testing.T) {
	ctx := t.Context()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "inside"), []byte("inside"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "abslink")))
	require.NoError(t, os.Symlink("../outside", filepath.Join(root, "rellink")))
	outsideBefore := testkit.Tree(t, outside)

	v := DirVolume(root)
	escapes := map[string]func() error{
		"read via ..":            func() error { _, err := v.ReadFile(ctx, "../outside/secret", 1<<10); return err },
		"read absolute":          func() error { _, err := v.ReadFile(ctx, filepath.Join(outside, "secret"), 1<<10); return err },
		"read via absolute link": func() error { _, err := v.ReadFile(ctx, "abslink/secret", 1<<10); return err },
		"read via relative link": func() error { _, err := v.ReadFile(ctx, "rellink/secret", 1<<10); return err },
		"open via link":          func() error { _, err := v.Open(ctx, "rellink/secret"); return err },
		"list via link":          func() error { _, err := v.ReadDir(ctx, "rellink"); return err },
		"stat via ..":            func() error { _, err := v.Stat(ctx, "../outside"); return err },
		"write via link":         func() error { return v.WriteFile(ctx, "rellink/planted", []byte("x")) },
		"mkdir via ..":           func() error { return v.MkdirAll(ctx, "../outside/planted") },
		"rename out":             func() error { return v.Rename(ctx, "inside", "../outside/moved") },
		"rename via link":        func() error { return v.Rename(ctx, "inside", "rellink/moved") },
		"remove via link":        func() error { return v.RemoveAll(ctx, "rellink/secret") },
		"remove the root":        func() error { return v.RemoveAll(ctx, ".") },
	}
	for name, op := range escapes {
		assert.Error(t, op(), name)
	}
	assert.Equal(t, outsideBefore, testkit.Tree(t, outside), "nothing outside the root was touched")

	// Control: the same operations on names inside the root work.
	data, err := v.ReadFile(ctx, "inside", 1<<10)
	require.NoError(t, err)
	assert.Equal(t, "inside", string(data))
	require.NoError(t, v.MkdirAll(ctx, "a/b"))
	require.NoError(t, v.WriteFile(ctx, "a/b/c", []byte("c")))
	require.NoError(t, v.Rename(ctx, "a/b/c", "a/d"))
	entries, err := v.ReadDir(ctx, "a")
	require.NoError(t, err)
	require.Len(t, entries, 2)
	assert.Equal(t, "b", entries[0].Name())
	assert.Equal(t, "d", entries[1].Name())
	f, err := v.Open(ctx, "a/d")
	require.NoError(t, err)
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Equal(t, "c", string(got))
	require.NoError(t, v.RemoveAll(ctx, "a"))
	_, err = v.Stat(ctx, "a")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestAVolumeOperationDoesNotStartOnceItsContextIsDone(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		v := k.openVolume(t)
		done, cancel := context.WithCancel(t.Context())
		cancel()
		err := v.WriteFile(done, "x", []byte("x"))
		assert.ErrorIs(t, err, context.Canceled)
		_, err = v.Stat(t.Context(), "x")
		assert.ErrorIs(t, err, fs.ErrNotExist, "nothing was written")
		require.NoError(t, v.WriteFile(t.Context(), "x", []byte("x")), "control: with a live context the write happens")
		_, err = v.Stat(t.Context(), "x")
		require.NoError(t, err)
	})
}

// perOperationVolume opens a fresh DirVolume for every operation: the way
// the volume used to reopen its root each time (the negative control).
type perOperationVolume struct{ root string }

func (p perOperationVolume) WriteFile(ctx context.Context, name string, data []byte) error {
	v := DirVolume(p.root)
	defer v.(io.Closer).Close()
	return v.WriteFile(ctx, name, data)
}

func (p perOperationVolume) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	v := DirVolume(p.root)
	defer v.(io.Closer).Close()
	return v.ReadFile(ctx, name, max)
}

func TestTheDirVolumeOpensItsRootOnceNotOnEveryOperation(t *testing.T) {
	type readWriter interface {
		WriteFile(ctx context.Context, name string, data []byte) error
		ReadFile(ctx context.Context, name string, max int64) ([]byte, error)
	}
	// The root is moved away after the first operation: a volume holding
	// its root keeps working on it; one that reopens the path fails.
	check := func(t *testing.T, open func(root string) readWriter) error {
		ctx := t.Context()
		dir := t.TempDir()
		root := filepath.Join(dir, "volume")
		require.NoError(t, os.Mkdir(root, 0o755))
		v := open(root)
		require.NoError(t, v.WriteFile(ctx, "first", []byte("1")))
		require.NoError(t, os.Rename(root, filepath.Join(dir, "moved")))
		if err := v.WriteFile(ctx, "second", []byte("2")); err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(dir, "moved", "second"))
		require.NoError(t, err, "the second write landed in the root the volume holds")
		assert.Equal(t, "2", string(got))
		return nil
	}
	require.NoError(t, check(t, func(root string) readWriter {
		v := DirVolume(root)
		t.Cleanup(func() { _ = v.(io.Closer).Close() })
		return v
	}))
	t.Run("negative control: reopening per operation", func(t *testing.T) {
		assert.ErrorIs(t, check(t, func(root string) readWriter { return perOperationVolume{root: root} }), fs.ErrNotExist)
	})
}

func TestAClosedDirVolumeRefusesOperations(t *testing.T) {
	v := DirVolume(t.TempDir())
	require.NoError(t, v.WriteFile(t.Context(), "a", []byte("1")))
	require.NoError(t, v.(io.Closer).Close())
	err := v.WriteFile(t.Context(), "b", []byte("2"))
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, errVolumeClosed)
}

// Every volume reads a file whole only within the read's bound: at the
// bound it reads it, one byte over it refuses with an error IsTooLarge
// reports (not an outage), and a file far over it costs no more memory
// than the bound, so a record file grown by accident or by an attacker
// cannot exhaust a replica's memory. Negative control (run): with both
// volumes' ReadFile reading the whole file and then comparing its length,
// the bound checks hold and the memory check fails (16 MiB allocated).
func TestEveryVolumeReadsAFileWholeOnlyWithinTheReadsBound(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		v := k.openVolume(t)
		data := bytes.Repeat([]byte("x"), 100)
		require.NoError(t, v.WriteFile(ctx, "f", data))

		got, err := v.ReadFile(ctx, "f", 100)
		require.NoError(t, err, "a file of exactly the bound")
		assert.Equal(t, data, got)

		got, err = v.ReadFile(ctx, "f", 99)
		assert.True(t, IsTooLarge(err), "%v", err)
		assert.False(t, IsUnavailable(err), "a file too large is not a volume down: %v", err)
		assert.ErrorContains(t, err, "f")
		assert.ErrorContains(t, err, "99 bytes")
		assert.Nil(t, got)

		require.NoError(t, v.WriteFile(ctx, "empty", nil))
		got, err = v.ReadFile(ctx, "empty", 0)
		require.NoError(t, err)
		assert.Empty(t, got)

		_, err = v.ReadFile(ctx, "f", -1)
		assert.ErrorContains(t, err, "negative bound")
		assert.False(t, IsTooLarge(err))
		_, err = v.ReadFile(ctx, "missing", 10)
		assert.ErrorIs(t, err, fs.ErrNotExist)

		const huge = 16 << 20
		require.NoError(t, v.WriteFile(ctx, "huge", make([]byte, huge)))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = v.ReadFile(ctx, "huge", 1<<10)
		runtime.ReadMemStats(&after)
		require.True(t, IsTooLarge(err), "%v", err)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(huge/4), "bytes allocated by the refused read")
	})
}

// ReadAtMost, a volume's ReadFile after the open, takes at most one byte
// past the bound from a reader that does not say its length (a file
// growing while it is read, an object streamed without one), and reads
// whole within the largest bound (control run: with max+1 overflowing, the
// MaxInt64 row reads nothing).
func TestReadAtMostTakesNoMoreThanOneBytePastTheBound(t *testing.T) {
	for _, tc := range []struct {
		size, max int64
		tooLarge  bool
	}{{0, 0, false}, {10, 10, false}, {11, 10, true}, {1 << 20, 10, true}, {5, 0, true}, {10, math.MaxInt64, false}} {
		r := &countingReader{r: io.LimitReader(zeros{}, tc.size)}
		got, err := ReadAtMost(r, "n", tc.max)
		assert.Equal(t, tc.tooLarge, IsTooLarge(err), "%d bytes, bound %d: %v", tc.size, tc.max, err)
		if !tc.tooLarge {
			require.NoError(t, err)
			assert.Len(t, got, int(tc.size))
		}
		assert.LessOrEqual(t, r.n-1, tc.max, "bytes taken from %d, bound %d (at most one past it)", tc.size, tc.max)
	}
	_, err := ReadAtMost(zeros{}, "n", -1)
	assert.ErrorContains(t, err, "negative bound")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// A DirVolume's error that says its share did not answer (a network mount
// gone away or timing out, a failing disk) is an outage, IsUnavailable like
// an object store's 5xx, so that the landing fails the read rather than
// take the file for a bad one (TestAnOutageReadingTheNewestRecordFailsTheReadInsteadOfServingTheOlderOne);
// an answer about the file is not. The errors are made here: a share that
// fails on demand is not something a test can mount. Negative control
// (run): without the marking, every outage row fails.
func TestADirVolumesErrorFromAShareThatDoesNotAnswerIsUnavailable(t *testing.T) {
	d := DirVolume(t.TempDir()).(*dirVolume)
	t.Cleanup(func() { _ = d.Close() })
	for errno, want := range map[syscall.Errno]bool{
		syscall.EIO: true, syscall.ESTALE: true, syscall.ETIMEDOUT: true, syscall.ENOTCONN: true,
		syscall.ECONNRESET: true, syscall.ECONNREFUSED: true, syscall.ECONNABORTED: true,
		syscall.EHOSTDOWN: true, syscall.EHOSTUNREACH: true, syscall.ENETDOWN: true, syscall.ENETUNREACH: true,
		// Controls: answers about the file.
		syscall.ENOENT: false, syscall.EACCES: false, syscall.EEXIST: false, syscall.ENOTDIR: false, syscall.EISDIR: false,
	} {
		err := d.do(t.Context(), "readfile", "f", func(*os.Root) error {
			return &fs.PathError{Op: "read", Path: "f", Err: errno}
		})
		assert.Equal(t, want, IsUnavailable(err), "%v", err)
		assert.ErrorIs(t, err, errno, "the cause is kept")
	}
	_, err := d.ReadFile(t.Context(), "missing", 1)
	assert.False(t, IsUnavailable(err), "a real missing file: %v", err)
}

// A DirVolume's WriteFrom whose source fails (the landing's sources are its
// local spool files) reports the source's failure, kept as the cause, and
// never as an outage of the volume's share, whatever the errno: the volume
// answered. The file written so far is the caller's to discard. Negative
// control (run): with the source's error going through the share's marking,
// the EIO and ESTALE rows are IsUnavailable.
func TestADirVolumesWriteFromWhoseSourceFailsIsNoOutageOfTheVolume(t *testing.T) {
	d := DirVolume(t.TempDir()).(*dirVolume)
	t.Cleanup(func() { _ = d.Close() })
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ESTALE, syscall.EACCES} {
		src := io.MultiReader(strings.NewReader("part of a bundle"), iotest.ErrReader(&fs.PathError{Op: "read", Path: "spool", Err: errno}))
		err := d.WriteFrom(t.Context(), "f", src)
		require.Error(t, err, "%v", errno)
		assert.False(t, IsUnavailable(err), "%v", err)
		assert.ErrorIs(t, err, errno, "the cause is kept")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, d.WriteFrom(ctx, "f", strings.NewReader("x")), context.Canceled)
	require.NoError(t, d.WriteFrom(t.Context(), "f", strings.NewReader("whole")))
	data, err := d.ReadFile(t.Context(), "f", 16)
	require.NoError(t, err)
	assert.Equal(t, "whole", string(data))
}
