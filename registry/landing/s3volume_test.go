package landing

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/internal/testkit"
)

func s3Volume(t *testing.T, srv *s3test.Server, opts S3Options) *S3Volume {
	t.Helper()
	opts.Client, opts.Bucket = srv.Client(), srv.Bucket
	v, err := NewS3Volume(opts)
	require.NoError(t, err)
	return v
}

// A stalled object store (it accepts the request and never answers) ends
// each call at S3Options.CallBudget, on the injected clock, with an error
// naming the request, the key and the landing's stage, that the registry
// answers 503 (context.DeadlineExceeded, ErrUnavailable). Negative control:
// with a budget far longer than the clock moved, the same call is still
// waiting, and completes once the store answers.
func TestAStalledObjectStoreEndsEachCallAtItsBudgetNamingTheRequest(t *testing.T) {
	const budget = 5 * time.Second
	srv := s3test.Start(t)
	clk := clock.NewMock()
	l := newLanding(t, s3Volume(t, srv, S3Options{Prefix: "p", CallBudget: budget, Clock: clk}), Options{})
	_, err := l.Land(t.Context(), "Stall", "1.0.0", testkit.ModuleArchive(t, "Stall", "1.0.0", 1))
	require.NoError(t, err)

	activation := func(l *ModuleLanding) <-chan error {
		done := make(chan error, 1)
		go func() { _, err := l.Activation(context.Background()); done <- err }()
		return done
	}
	entered := srv.Stall()
	done := activation(l)
	<-entered
	clk.Add(budget)
	select {
	case err = <-done:
	case <-time.After(testkit.Bound):
		t.Fatalf("the call did not end within %s of its budget running out", testkit.Bound)
	}
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, ErrUnavailable)
	var ose *ObjectStoreError
	require.ErrorAs(t, err, &ose)
	assert.Equal(t, "ListObjectsV2", ose.Op)
	assert.Equal(t, "p/modules/", ose.Key)
	assert.Contains(t, err.Error(), "list modules", "the landing's stage")
	assert.Contains(t, err.Error(), "no answer within the call budget (5s)")

	t.Run("negative control: a budget the clock has not reached keeps waiting", func(t *testing.T) {
		patient := newLanding(t, s3Volume(t, srv, S3Options{Prefix: "p", CallBudget: time.Hour, Clock: clk}), Options{})
		entered := srv.Stall()
		done := activation(patient)
		<-entered
		clk.Add(budget)
		srv.Resume()
		select {
		case err := <-done:
			require.NoError(t, err, "the call was still waiting when the store answered")
		case <-time.After(testkit.Bound):
			t.Fatalf("the call did not end within %s of the store answering", testkit.Bound)
		}
	})
}

// A store that refuses connections is unavailable (503), not an internal
// error; a store that answers "no such bucket" is a configuration mistake
// (not unavailable). The second is the first's negative control.
func TestAnObjectStoreThatIsDownIsUnavailableAndAMissingBucketIsNot(t *testing.T) {
	srv := s3test.Start(t)
	v := s3Volume(t, srv, S3Options{})
	require.NoError(t, v.WriteFile(t.Context(), "a", []byte("x")))

	srv.Stop()
	_, err := v.ReadFile(t.Context(), "a")
	require.ErrorIs(t, err, ErrUnavailable, "%v", err)
	var ose *ObjectStoreError
	require.ErrorAs(t, err, &ose)
	assert.Equal(t, "GetObject", ose.Op)

	require.NoError(t, srv.Restart())
	got, err := v.ReadFile(t.Context(), "a")
	require.NoError(t, err, "the objects outlive the outage")
	assert.Equal(t, []byte("x"), got)

	wrong, err := NewS3Volume(S3Options{Client: srv.Client(), Bucket: "no-such-bucket"})
	require.NoError(t, err)
	_, err = wrong.ReadDir(t.Context(), ".")
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrUnavailable, "a missing bucket is not an outage: %v", err)
}

// Object storage has no rename. A wrapper that hides CreateExclusive would
// make the landing claim by Rename: the S3 volume refuses it, so the
// landing fails and serves nothing rather than claim twice. Control: the
// same landing through keepExclusive lands.
func TestALandingOnAnObjectStoreWithoutCreateExclusiveFailsInsteadOfRenaming(t *testing.T) {
	srv := s3test.Start(t)
	hidden := struct{ Volume }{s3Volume(t, srv, S3Options{})}
	l := newLanding(t, hidden, Options{})
	_, err := l.Land(t.Context(), "Hide", "1.0.0", testkit.ModuleArchive(t, "Hide", "1.0.0", 1))
	require.ErrorIs(t, err, ErrNoRename)
	act, err := l.Activation(t.Context())
	require.NoError(t, err)
	assert.Empty(t, act.Modules)

	kept := newLanding(t, keepExclusive(hidden, hidden.Volume), Options{})
	_, err = kept.Land(t.Context(), "Hide", "1.0.0", testkit.ModuleArchive(t, "Hide", "1.0.0", 1))
	require.NoError(t, err)
}

// WriteFrom holds at most 1 MiB of a stream of unknown length in memory:
// a longer one goes through a temporary file, removed afterwards, and
// reads back whole through Open. Control: a short one is uploaded from
// memory and leaves no temporary file either.
func TestALongStreamIsSpooledToDiskNotMemoryAndReadsBackWhole(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	srv := s3test.Start(t)
	v := s3Volume(t, srv, S3Options{})
	ctx := t.Context()
	for _, size := range []int{smallWrite / 2, 3 * smallWrite} {
		data := testkit.RandomBytes(size)
		spooled := make(chan []string, 1)
		r := &watchTemp{r: bytes.NewReader(data), dir: tmp, seen: spooled}
		require.NoError(t, v.WriteFrom(ctx, "big/blob", struct{ io.Reader }{r}))
		rc, err := v.Open(ctx, "big/blob")
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		assert.True(t, bytes.Equal(data, got), "size %d reads back whole", size)
		left, _ := os.ReadDir(tmp)
		assert.Empty(t, left, "no temporary file left")
		var during []string
		select {
		case during = <-spooled:
		default:
		}
		if size > smallWrite {
			assert.NotEmpty(t, during, "a long stream is spooled to a temporary file")
		} else {
			assert.Empty(t, during, "control: a short stream is not")
		}
	}
}

// watchTemp reports, at its end, the files in dir: a spool file exists while
// the stream is read into it.
type watchTemp struct {
	r    io.Reader
	dir  string
	seen chan []string
}

func (w *watchTemp) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if errors.Is(err, io.EOF) {
		entries, _ := os.ReadDir(w.dir)
		var names []string
		for _, e := range entries {
			names = append(names, filepath.Join(w.dir, e.Name()))
		}
		select {
		case w.seen <- names:
		default:
		}
	}
	return n, err
}

func TestAnS3VolumeURLIsCheckedBeforeAnyRequest(t *testing.T) {
	for _, bad := range []string{
		"http://bucket/prefix",
		"s3:///prefix",
		"s3://bucket/prefix?endpoint=ftp://x",
		"s3://bucket/prefix?endpont=http://x",
		"s3://bucket/../x?endpoint=http://127.0.0.1:1",
	} {
		_, err := OpenS3Volume(t.Context(), bad, S3Options{})
		require.Error(t, err, bad)
		assert.True(t, strings.Contains(err.Error(), "S3") || strings.Contains(err.Error(), "Prefix"), "%s: %v", bad, err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	srv := s3test.Start(t)
	v, err := OpenS3Volume(t.Context(), srv.VolumeURL("reg/one"), S3Options{})
	require.NoError(t, err, "control: a good URL opens")
	t.Cleanup(func() { _ = v.Close() })
	require.NoError(t, v.WriteFile(t.Context(), "x", []byte("1")))
	_, err = s3Volume(t, srv, S3Options{Prefix: "reg/one"}).Stat(t.Context(), "x")
	require.NoError(t, err, "the URL's path is the prefix")
	_, err = s3Volume(t, srv, S3Options{Prefix: "reg"}).Stat(t.Context(), "x")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// lostAnswer creates what its inner volume creates but, for a record,
// reports a failure as a PUT whose answer was lost would (or as the SDK's
// retry of it would: 412, the key exists). With drop set it creates
// nothing and fails.
type lostAnswer struct {
	ExclusiveVolume
	drop bool
}

func (v lostAnswer) CreateExclusive(ctx context.Context, name string, data []byte) error {
	if !strings.Contains(name, "/records/") {
		return v.ExclusiveVolume.CreateExclusive(ctx, name, data)
	}
	if !v.drop {
		if err := v.ExclusiveVolume.CreateExclusive(ctx, name, data); err != nil {
			return err
		}
	}
	return &ObjectStoreError{Op: "PutObject", Key: name, Err: errors.New("connection reset by peer"), Unavailable: true}
}

// On object storage the commit is the record's conditional create. One
// that reports a failure but took place is a landing (the commit checks
// for the record, as it does after a failed rename). Negative control: a
// create that did not take place is a failed landing, and nothing is
// served.
func TestARecordCreateThatReportsAFailureButTookPlaceIsALanding(t *testing.T) {
	srv := s3test.Start(t)
	ctx := t.Context()
	l := newLanding(t, lostAnswer{ExclusiveVolume: s3Volume(t, srv, S3Options{Prefix: "took"})}, Options{})
	_, err := l.Land(ctx, "Lost", "1.0.0", testkit.ModuleArchive(t, "Lost", "1.0.0", 1))
	require.NoError(t, err)
	act, err := l.Activation(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"Lost": "1.0.0"}, servedVersions(act))

	dropped := newLanding(t, lostAnswer{ExclusiveVolume: s3Volume(t, srv, S3Options{Prefix: "dropped"}), drop: true}, Options{})
	_, err = dropped.Land(ctx, "Lost", "1.0.0", testkit.ModuleArchive(t, "Lost", "1.0.0", 1))
	require.ErrorIs(t, err, ErrUnavailable)
	act, err = dropped.Activation(ctx)
	require.NoError(t, err)
	assert.Empty(t, act.Modules, "control: a commit that did not take place serves nothing")
	again := newLanding(t, s3Volume(t, srv, S3Options{Prefix: "dropped"}), Options{})
	_, err = again.Land(ctx, "Lost", "1.0.0", testkit.ModuleArchive(t, "Lost", "1.0.0", 2))
	require.NoError(t, err, "and its claim was given back: other bytes may land")
}
