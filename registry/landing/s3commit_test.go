package landing

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
)

// lateRecordPut stands between an S3 client and the server. It takes the
// first PUT of a record (the commit) off the wire and sends it on held, then
// leaves its client waiting until the client's budget ends: a request that
// reached the store, whose answer the client never saw. The test applies it
// later, when the store gets to it. With refuse set it answers that PUT 403
// instead (a store's answer: nothing was written). Every other request
// passes through.
type lateRecordPut struct {
	inner  http.RoundTripper
	held   chan *http.Request
	refuse bool
	taken  bool
}

func (rt *lateRecordPut) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPut || !strings.Contains(req.URL.Path, "/records/") || rt.taken {
		return rt.inner.RoundTrip(req)
	}
	rt.taken = true // one landing's requests run one at a time
	if rt.refuse {
		_ = req.Body.Close()
		return &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Body: io.NopCloser(strings.NewReader("<Error><Code>AccessDenied</Code></Error>")), Request: req}, nil
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	later := req.Clone(context.Background())
	later.Body = io.NopCloser(bytes.NewReader(body))
	rt.held <- later
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// A record PUT that reaches the store but whose answer comes after the
// client's budget, and that the store applies only after the landing has
// looked for the record and not found it, may be served: the landing must
// report the commit unknown and keep the version's claim, so the version's
// bytes can never change. Before the fix the landing took "not found" for
// "not written", gave the claim back and reported a plain outage, and other
// bytes then landed under the served version.
//
// Negative controls (run): with the fix's IsUnavailable case in commit
// removed, the main case fails (no CommitUnknownError; the other bytes
// land and 1.0.0 serves them). The subtest is the fix's own control: a PUT
// the store refused (403, an answer: nothing written) still releases the
// version; with the fix widened to keep the claim on every failed commit,
// the subtest fails (run).
func TestARecordPutTheStoreAppliesAfterTheLandingLookedForItKeepsTheVersionsClaim(t *testing.T) {
	const budget = 5 * time.Second
	srv := s3test.Start(t)
	ctx := t.Context()
	held := make(chan *http.Request, 1)
	inner := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(inner.CloseIdleConnections)
	rt := &lateRecordPut{inner: inner, held: held}
	clk := clock.NewMock()
	client := s3.New(srv.Client().Options(), func(o *s3.Options) { o.HTTPClient = &http.Client{Transport: rt} })
	v, err := s3volume.New(s3volume.Options{Client: client, Bucket: srv.Bucket, Prefix: "late", CallBudget: budget, Clock: clk})
	require.NoError(t, err)
	l := newLanding(t, v, Options{})

	first := testkit.ModuleArchive(t, "Late", "1.0.0", 1)
	landed := make(chan error, 1)
	go func() { _, err := l.Land(ctx, "Late", "1.0.0", first); landed <- err }()
	put := testkit.Receive(t, held, "the record's PUT")
	clk.Add(budget) // the client gives up on it; the landing looks for the record
	err = testkit.Receive(t, landed, "the landing's answer")
	resp, perr := inner.RoundTrip(put) // the store applies the PUT now
	require.NoError(t, perr)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	plain := newLanding(t, s3Volume(t, srv, s3volume.Options{Prefix: "late"}), Options{})
	act, aerr := plain.Activation(ctx)
	require.NoError(t, aerr)
	require.Equal(t, map[string]string{"Late": "1.0.0"}, servedVersions(act), "the record is in place and served")
	servedSum := act.Modules[0].SHA256

	var unknown *CommitUnknownError
	assert.ErrorAs(t, err, &unknown, "the landing could not know whether its commit took place")
	assert.True(t, IsUnavailable(err), "%v", err)
	// A removal ends the walk by which a version with no claim is claimed
	// by its record (as is a landing of its bytes again, which would claim
	// it so): from then on only the claim keeps the version's bytes.
	_, err = plain.Remove(ctx, "Late")
	require.NoError(t, err)
	_, err = plain.Land(ctx, "Late", "1.0.0", testkit.ModuleArchive(t, "Late", "1.0.0", 2))
	var conflict *VersionConflictError
	require.ErrorAs(t, err, &conflict, "a version number is never reused: the claim stayed with the served record")
	assert.Equal(t, servedSum, conflict.ExistingSHA256)

	t.Run("control: a record PUT the store refused releases the version", func(t *testing.T) {
		refused := &lateRecordPut{inner: inner, refuse: true}
		client := s3.New(srv.Client().Options(), func(o *s3.Options) { o.HTTPClient = &http.Client{Transport: refused} })
		v, err := s3volume.New(s3volume.Options{Client: client, Bucket: srv.Bucket, Prefix: "refused"})
		require.NoError(t, err)
		_, err = newLanding(t, v, Options{}).Land(ctx, "Late", "1.0.0", first)
		require.Error(t, err)
		var unknown *CommitUnknownError
		assert.False(t, errors.As(err, &unknown), "the store answered: nothing was written (%v)", err)
		again := newLanding(t, s3Volume(t, srv, s3volume.Options{Prefix: "refused"}), Options{})
		_, err = again.Land(ctx, "Late", "1.0.0", testkit.ModuleArchive(t, "Late", "1.0.0", 2))
		require.NoError(t, err, "nothing holds the version: other bytes may land")
	})
}
