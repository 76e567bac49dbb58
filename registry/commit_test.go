package registry

import (
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
)

// stalledRename holds the first rename into a directory named dir (a
// module's "records": the landing's commit point; "generations": its bytes
// placed, short of it) until gate opens, then makes it. The rename is in
// flight when it holds: like a network share's, it is not interrupted by
// its context, and it takes place once let go.
type stalledRename struct {
	landing.Volume
	dir     string
	entered chan string
	gate    *testkit.Releaser
	once    sync.Once
}

func stallRenameInto(dir string, gate *testkit.Releaser) (*stalledRename, func(landing.Volume) landing.Volume) {
	s := &stalledRename{dir: dir, entered: make(chan string, 1), gate: gate}
	return s, func(v landing.Volume) landing.Volume { s.Volume = v; return s }
}

func (s *stalledRename) Rename(ctx context.Context, oldname, newname string) error {
	if path.Base(path.Dir(newname)) == s.dir && !strings.HasPrefix(path.Base(newname), ".") {
		held := false
		s.once.Do(func() { held = true })
		if held {
			s.entered <- newname
			<-s.gate.Done()
		}
	}
	return s.Volume.Rename(ctx, oldname, newname)
}

func TestAPublishWhoseBudgetRunsOutDuringItsCommitIsAnsweredAsLandedNot503(t *testing.T) {
	archive := testkit.ModuleArchive(t, "Acme.Crm", "1.0.0", 2)
	// run publishes through handler (the server's own when nil) while the
	// record's rename stalls past the publish budget, lets the rename go,
	// and returns the answer.
	run := func(t *testing.T, handler func(f *fixture) http.Handler) (*fixture, reply) {
		gate := testkit.NewReleaser(t)
		stall, wrap := stallRenameInto("records", gate)
		f := newFixture(t, fixtureOptions{volume: wrap})
		if handler != nil {
			srv := testkit.Serve(t, handler(f))
			f.http = srv
		}
		replied := f.send(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, archive))
		testkit.Receive(t, stall.entered, "the landing's commit (its record's rename)")
		f.clk.Advance(f.server.publishBudget) // the budget runs out during the commit
		gate.Release()
		return f, testkit.Receive(t, replied, "the publish's answer")
	}

	f, got := run(t, nil)
	require.NoError(t, got.err)
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	assert.True(t, decodePublish(t, got).Created)
	assert.Equal(t, map[string]string{"Acme.Crm": "1.0.0"}, f.activation(), "the answer says what the volume holds")
	again := f.do(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, archive))
	assert.Equal(t, http.StatusOK, again.status, "%s", again.body)

	t.Run("negative control: answered at the publish budget, the commit in progress lands behind a 503", func(t *testing.T) {
		// The route as it was wired before: its Deadline refuses at the
		// publish budget whatever the landing is doing.
		f, got := run(t, func(f *fixture) http.Handler {
			mux := http.NewServeMux()
			deadline := answer.Deadline{Route: publishPrefix, Budget: f.server.publishBudget, Clock: f.clk, Logger: quietLogger(), Unavailable: couldNotFindOut}
			mux.Handle(publishPrefix, answer.Arrival(f.clk, f.server.publishGate(deadline.Handler(f.server.publishRoute))))
			return mux
		})
		require.NoError(t, got.err)
		assert.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
		require.Eventually(t, func() bool { return len(f.activation()) == 1 }, testkit.Bound, 20*time.Millisecond,
			"the version lands all the same")
	})
}

func TestAPublishStoppedShortOfItsCommitPointByItsBudgetIs503AndServesNothing(t *testing.T) {
	archive := testkit.ModuleArchive(t, "Acme.Crm", "1.0.0", 2)
	run := func(t *testing.T, dir string) (*fixture, reply) {
		gate := testkit.NewReleaser(t)
		stall, wrap := stallRenameInto(dir, gate)
		f := newFixture(t, fixtureOptions{volume: wrap})
		replied := f.send(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, archive))
		testkit.Receive(t, stall.entered, "the landing's rename into "+dir)
		f.clk.Advance(f.server.publishBudget)
		gate.Release()
		return f, testkit.Receive(t, replied, "the publish's answer")
	}
	// The generation's bytes are placed (its rename completes) after the
	// budget ran out: the record is never written.
	f, got := run(t, "generations")
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
	assert.NotEmpty(t, got.header.Get("Retry-After"))
	failed := f.logs.Matching(slog.LevelWarn, "failed in "+StageLanding)
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0].Attrs["error"].String(), "publish budget of 1m0s ran out while waiting on "+StageLanding+", before Acme.Crm@1.0.0 was committed; nothing was published")
	assert.Empty(t, f.activation(), "nothing is served")
	key := f.instance("acme", "pro", "Plugins/*")
	idx, _ := f.index(key)
	assert.Empty(t, idx.Bundles)
	// Nothing claims the version either: publishing it again lands it.
	again := f.do(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, testkit.ModuleArchive(t, "Acme.Crm", "1.0.0", 3)))
	assert.Equal(t, http.StatusCreated, again.status, "%s", again.body)
	assert.Equal(t, http.StatusOK, f.do(request{path: client.BundlesPath + "/Acme.Crm/1.0.0", key: key}).status)

	// Control: the same stall at the commit point lands and says so.
	f, got = run(t, "records")
	assert.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	assert.Equal(t, map[string]string{"Acme.Crm": "1.0.0"}, f.activation())
}

// lostCommitAnswer makes the rename of a record into place (the landing's
// commit point) and then reports it failed, and fails every Stat of a
// record: a network share whose reply was lost and that then cannot be
// asked, so the landing cannot tell whether the commit took place
// (*landing.CommitUnknownError). It does so while on is set.
type lostCommitAnswer struct {
	landing.Volume
	on *atomic.Bool
}

func isRecordPath(name string) bool {
	return path.Base(path.Dir(name)) == "records" && !strings.HasPrefix(path.Base(name), ".")
}

func (v lostCommitAnswer) Rename(ctx context.Context, oldname, newname string) error {
	if !v.on.Load() || !isRecordPath(newname) {
		return v.Volume.Rename(ctx, oldname, newname)
	}
	if err := v.Volume.Rename(ctx, oldname, newname); err != nil {
		return err
	}
	return &fs.PathError{Op: "rename", Path: newname, Err: syscall.EIO}
}

func (v lostCommitAnswer) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if v.on.Load() && isRecordPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: syscall.EIO}
	}
	return v.Volume.Stat(ctx, name)
}

// A publication whose commit (its record's rename) may have taken place
// but could not be checked (*landing.CommitUnknownError) is the same
// situation as a store write whose answer did not come: a 503 with
// Retry-After saying it may have been applied ("outcomeUnknown": true) and
// that repeating is safe, since publishing the same bytes again answers
// with the version's record. Here the commit did take place, and
// publishing again says so (200).
//
// Negative control (run): without the CommitUnknownError case in
// publishRoute's landing, the answer was a 500 "internal error ...
// repeating the request will not help", and the status assertion failed.
func TestAPublicationWhoseCommitCouldNotBeCheckedIs503SayingItMayHaveBeenAppliedAndRepeatingIsSafe(t *testing.T) {
	archive := testkit.ModuleArchive(t, "Acme.Crm", "1.0.0", 2)
	lost := &atomic.Bool{}
	f := newFixture(t, fixtureOptions{volume: func(v landing.Volume) landing.Volume {
		return lostCommitAnswer{Volume: v, on: lost}
	}})
	lost.Store(true)
	got := f.do(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, archive))
	require.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
	assert.NotEmpty(t, got.header.Get("Retry-After"))
	var body struct {
		Error          string `json:"error"`
		Stage          string `json:"stage"`
		OutcomeUnknown bool   `json:"outcomeUnknown"`
	}
	require.NoError(t, json.Unmarshal(got.body, &body), "%s", got.body)
	assert.True(t, body.OutcomeUnknown, "%s", got.body)
	assert.Equal(t, StageLanding+": "+answer.ReasonOutcomeUnknownRepeatSafe, body.Error)
	assert.Equal(t, StageLanding, body.Stage)

	lost.Store(false) // the share answers again
	again := f.do(publishRequest("Acme.Crm", "?version=1.0.0", testPublishToken, archive))
	require.Equal(t, http.StatusOK, again.status, "the commit had taken place: %s", again.body)
	assert.False(t, decodePublish(t, again).Created)
}
