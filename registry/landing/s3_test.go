package landing

import (
	"context"
	"errors"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/internal/testkit"
)

func s3Volume(t *testing.T, srv *s3test.Server, opts s3volume.Options) *s3volume.Volume {
	t.Helper()
	opts.Client, opts.Bucket = srv.Client(), srv.Bucket
	v, err := s3volume.New(opts)
	require.NoError(t, err)
	return v
}

// A stalled object store (it accepts the request and never answers) ends
// each call at s3volume.Options.CallBudget, on the injected clock, with an error
// naming the request, the key and the landing's stage, that the registry
// answers 503 (context.DeadlineExceeded, ErrUnavailable). Negative control:
// with a budget far longer than the clock moved, the same call is still
// waiting, and completes once the store answers.
func TestAStalledObjectStoreEndsEachCallAtItsBudgetNamingTheRequest(t *testing.T) {
	const budget = 5 * time.Second
	srv := s3test.Start(t)
	clk := clock.NewMock()
	l := newLanding(t, s3Volume(t, srv, s3volume.Options{Prefix: "p", CallBudget: budget, Clock: clk}), Options{})
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
	assert.True(t, IsUnavailable(err), "%v", err)
	var ose *s3volume.Error
	require.ErrorAs(t, err, &ose)
	assert.Equal(t, "ListObjectsV2", ose.Op)
	assert.Equal(t, "p/modules/", ose.Key)
	assert.Contains(t, err.Error(), "list modules", "the landing's stage")
	assert.Contains(t, err.Error(), "no answer within the call budget (5s)")

	t.Run("negative control: a budget the clock has not reached keeps waiting", func(t *testing.T) {
		patient := newLanding(t, s3Volume(t, srv, s3volume.Options{Prefix: "p", CallBudget: time.Hour, Clock: clk}), Options{})
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
	v := s3Volume(t, srv, s3volume.Options{})
	require.NoError(t, v.WriteFile(t.Context(), "a", []byte("x")))

	srv.Stop()
	_, err := v.ReadFile(t.Context(), "a", 1)
	require.True(t, IsUnavailable(err), "%v", err)
	var ose *s3volume.Error
	require.ErrorAs(t, err, &ose)
	assert.Equal(t, "GetObject", ose.Op)

	require.NoError(t, srv.Restart())
	got, err := v.ReadFile(t.Context(), "a", 1)
	require.NoError(t, err, "the objects outlive the outage")
	assert.Equal(t, []byte("x"), got)

	wrong, err := s3volume.New(s3volume.Options{Client: srv.Client(), Bucket: "no-such-bucket"})
	require.NoError(t, err)
	_, err = wrong.ReadDir(t.Context(), ".")
	require.Error(t, err)
	assert.False(t, IsUnavailable(err), "a missing bucket is not an outage: %v", err)
}

// Object storage has no rename. A wrapper that hides CreateExclusive would
// make the landing claim by Rename: the S3 volume refuses it, so the
// landing fails and serves nothing rather than claim twice. Control: the
// same landing through keepExclusive lands.
func TestALandingOnAnObjectStoreWithoutCreateExclusiveFailsInsteadOfRenaming(t *testing.T) {
	srv := s3test.Start(t)
	hidden := struct{ Volume }{s3Volume(t, srv, s3volume.Options{})}
	l := newLanding(t, hidden, Options{})
	_, err := l.Land(t.Context(), "Hide", "1.0.0", testkit.ModuleArchive(t, "Hide", "1.0.0", 1))
	require.ErrorIs(t, err, s3volume.ErrNoRename)
	act, err := l.Activation(t.Context())
	require.NoError(t, err)
	assert.Empty(t, act.Modules)

	kept := newLanding(t, keepExclusive(hidden, hidden.Volume), Options{})
	_, err = kept.Land(t.Context(), "Hide", "1.0.0", testkit.ModuleArchive(t, "Hide", "1.0.0", 1))
	require.NoError(t, err)
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
	return &s3volume.Error{Op: "PutObject", Key: name, Err: errors.New("connection reset by peer"), IsUnavailable: true}
}

// On object storage the commit is the record's conditional create. One
// that reports a failure but took place is a landing (the commit checks
// for the record, as it does after a failed rename). Negative control: a
// create that did not take place is a failed landing, and nothing is
// served; as it failed unanswered, the outcome was unknown to the landing,
// which keeps the version's claim.
func TestARecordCreateThatReportsAFailureButTookPlaceIsALanding(t *testing.T) {
	srv := s3test.Start(t)
	ctx := t.Context()
	l := newLanding(t, lostAnswer{ExclusiveVolume: s3Volume(t, srv, s3volume.Options{Prefix: "took"})}, Options{})
	_, err := l.Land(ctx, "Lost", "1.0.0", testkit.ModuleArchive(t, "Lost", "1.0.0", 1))
	require.NoError(t, err)
	act, err := l.Activation(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"Lost": "1.0.0"}, servedVersions(act))

	dropped := newLanding(t, lostAnswer{ExclusiveVolume: s3Volume(t, srv, s3volume.Options{Prefix: "dropped"}), drop: true}, Options{})
	_, landErr := dropped.Land(ctx, "Lost", "1.0.0", testkit.ModuleArchive(t, "Lost", "1.0.0", 1))
	require.True(t, IsUnavailable(landErr), "%v", landErr)
	act, err = dropped.Activation(ctx)
	require.NoError(t, err)
	assert.Empty(t, act.Modules, "control: a commit that did not take place serves nothing")
	// A create that failed unanswered may still be applied by the store
	// (TestARecordPutTheStoreAppliesAfterTheLandingLookedForItKeepsTheVersionsClaim):
	// its outcome is unknown and the version keeps its claim.
	var unknown *CommitUnknownError
	require.ErrorAs(t, landErr, &unknown)
	again := newLanding(t, s3Volume(t, srv, s3volume.Options{Prefix: "dropped"}), Options{})
	_, err = again.Land(ctx, "Lost", "1.0.0", testkit.ModuleArchive(t, "Lost", "1.0.0", 2))
	var conflict *VersionConflictError
	require.ErrorAs(t, err, &conflict, "other bytes are refused: the claim stayed")
	_, created, err := landBytes(ctx, again, "Lost", "1.0.0", testkit.ModuleArchive(t, "Lost", "1.0.0", 1))
	require.NoError(t, err, "the same bytes land")
	assert.True(t, created, "nothing had been served: they land anew")
}
