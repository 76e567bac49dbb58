package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
)

// lostPackageWriteAnswer writes the first package node it is given and
// then reports that the write's answer did not come (mesh.ErrOutcomeUnknown):
// what pgstore reports for a write whose budget ran out after it was sent,
// and which then commits (mesh/pgstore's
// TestAWriteWhoseBudgetEndsAfterItWasSentSaysItMayHaveCommittedAndOneNeverSentDoesNot).
type lostPackageWriteAnswer struct {
	mesh.Store
	lost *atomic.Bool
}

func (s lostPackageWriteAnswer) PutIfVersion(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	if n.NodeType != PackageNodeType || !s.lost.CompareAndSwap(false, true) {
		return s.Store.PutIfVersion(ctx, n, expected)
	}
	if _, err := s.Store.PutIfVersion(ctx, n, expected); err != nil {
		return mesh.Node{}, err
	}
	return mesh.Node{}, &mesh.UnavailableError{Op: "put " + n.Path, Err: fmt.Errorf("the write's answer did not come: %w", mesh.ErrOutcomeUnknown)}
}

// A publication whose package node was written but whose write's answer
// did not come is a 503 with Retry-After whose body says the write may
// have been applied and that repeating is safe ("outcomeUnknown": true);
// nothing is published. Publishing again — here without the tier — lands
// the version at the tier the first attempt's node holds: the write had
// been applied, and repeating was safe.
//
// Negative controls (run): without the ErrOutcomeUnknown case in
// answer's refuse, the 503 read "could not find out: unavailable" and the
// outcomeUnknown and "may have been applied" assertions failed; without
// answer.RepeatSafe around publishTarget's outcome-unknown error, the 503
// said "read the state back before repeating" and the "repeating it is
// safe" assertion failed.
func TestAPublicationWhosePackageNodeWriteLostItsAnswerIs503SayingItMayHaveBeenAppliedAndPublishingAgainIsSafe(t *testing.T) {
	f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) {
		o.Mesh = lostPackageWriteAnswer{Store: o.Mesh, lost: &atomic.Bool{}}
	}})
	archive := testkit.ModuleArchive(t, "Sec.Lost", "1.0.0", 2)
	got := f.do(publishRequest("Sec.Lost", "?version=1.0.0&tier=pro", testPublishToken, archive))
	require.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
	assert.NotEmpty(t, got.header.Get("Retry-After"))
	var body struct {
		Error          string `json:"error"`
		Stage          string `json:"stage"`
		OutcomeUnknown bool   `json:"outcomeUnknown"`
	}
	require.NoError(t, json.Unmarshal(got.body, &body), "%s", got.body)
	assert.True(t, body.OutcomeUnknown, "%s", got.body)
	assert.Contains(t, body.Error, "may have been applied")
	assert.Contains(t, body.Error, "repeating it is safe")
	assert.Equal(t, StagePackageNode, body.Stage)

	got = f.do(publishRequest("Sec.Lost", "?version=1.0.0", testPublishToken, archive))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	landed := decodePublish(t, got)
	assert.True(t, landed.Created, "the first attempt published nothing")
	assert.Equal(t, "pro", landed.Tier, "the first attempt's package node had been written")
}
