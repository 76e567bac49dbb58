package auth

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
)

// countingReader counts the reads of the security nodes and of their
// version.
type countingReader struct {
	inner interface {
		mesh.SecurityReader
		mesh.SecurityVersioner
	}
	snapshots atomic.Int64
	versions  atomic.Int64
}

func (c *countingReader) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	c.snapshots.Add(1)
	return c.inner.SecurityNodes(ctx)
}

func (c *countingReader) SecurityVersion(ctx context.Context) (mesh.SecurityVersion, error) {
	c.versions.Add(1)
	return c.inner.SecurityVersion(ctx)
}

// snapshotsOnly is the same reader without its version: every decision has
// to read the nodes to learn whether they changed.
type snapshotsOnly struct{ c *countingReader }

func (s snapshotsOnly) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	return s.c.SecurityNodes(ctx)
}

func TestAWarmDecisionReadsTheVersionAndTheNodesOnlyWhenTheyChanged(t *testing.T) {
	ctx := context.Background()
	run := func(t *testing.T, reader func(*countingReader) mesh.SecurityReader) *countingReader {
		s := newSecurityStore(t)
		org(t, s)
		counts := &countingReader{inner: s}
		fs := &FoldSource{Reader: reader(counts)}
		for range 50 {
			require.Equal(t, access.Denied, fs.Decide(ctx, "alice", "acme/roadmap", access.Update))
		}
		// A security write moves the version: the next decision sees it.
		putNode(t, s, "acme/_Access/contractors", AssignmentNodeType, assignment("contractors", roleGrant{Role: access.RoleViewer}))
		for range 50 {
			require.Equal(t, access.Allowed, fs.Decide(ctx, "alice", "acme/roadmap", access.Update), "the revoked deny is gone at once")
		}
		return counts
	}
	counts := run(t, func(c *countingReader) mesh.SecurityReader { return c })
	assert.EqualValues(t, 2, counts.snapshots.Load(), "the nodes are read once per version")
	assert.EqualValues(t, 100-1, counts.versions.Load(), "every decision after the first reads the version")

	t.Run("a reader without a version reads the nodes on every decision", func(t *testing.T) {
		counts := run(t, func(c *countingReader) mesh.SecurityReader { return snapshotsOnly{c} })
		assert.EqualValues(t, 100, counts.snapshots.Load())
	})
}

func TestADenyWrittenOnOnePostgresReplicaDecidesTheOthersNextCheck(t *testing.T) {
	stores := openReplicas(t, 2)
	ctx := context.Background()
	putNode(t, stores[0], "acme/_Access/team-7", AssignmentNodeType, assignment("team-7", roleGrant{Role: access.RoleEditor}))
	putNode(t, stores[0], "Org/Memberships/alice", MembershipNodeType, map[string]any{"member": "alice", "groups": []string{"team-7"}})

	other := &countingReader{inner: stores[1]}
	fs := &FoldSource{Reader: other}
	require.Equal(t, access.Allowed, fs.Decide(ctx, "alice", "acme/roadmap", access.Update))
	require.Equal(t, access.Allowed, fs.Decide(ctx, "alice", "acme/roadmap", access.Update))
	assert.EqualValues(t, 1, other.snapshots.Load(), "a warm check on PostgreSQL reads the version row, not the fold")

	// No wait for a change feed: the version row is committed with the deny.
	putNode(t, stores[0], "acme/_Access/alice-deny", AssignmentNodeType, assignment("alice", roleGrant{Role: access.RoleEditor, Denied: true}))
	assert.Equal(t, access.Denied, fs.Decide(ctx, "alice", "acme/roadmap", access.Update), "the other replica's next check denies")
	assert.EqualValues(t, 2, other.snapshots.Load())
}

// stackProbe records whether each security read ran with the test
// function on its stack, that is, on the caller's goroutine.
type stackProbe struct {
	*countingReader
	caller        string
	versionOnCall []bool
	nodesOnCall   []bool
}

func onStack(fn string) bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "."+fn) {
			return true
		}
		if !more {
			return false
		}
	}
}

func (p *stackProbe) SecurityNodes(ctx context.Context) (mesh.SecuritySnapshot, error) {
	p.nodesOnCall = append(p.nodesOnCall, onStack(p.caller))
	return p.countingReader.SecurityNodes(ctx)
}

func (p *stackProbe) SecurityVersion(ctx context.Context) (mesh.SecurityVersion, error) {
	p.versionOnCall = append(p.versionOnCall, onStack(p.caller))
	return p.countingReader.SecurityVersion(ctx)
}

func TestAWarmDecisionRunsOnTheCallersGoroutine(t *testing.T) {
	s := newSecurityStore(t)
	putNode(t, s, "acme/_Access/anna", AssignmentNodeType, assignment("anna", roleGrant{Role: access.RoleViewer}))
	probe := &stackProbe{countingReader: &countingReader{inner: s}, caller: "TestAWarmDecisionRunsOnTheCallersGoroutine"}
	fs := &FoldSource{Reader: probe}
	ctx := context.Background()
	for range 3 {
		require.Equal(t, access.Allowed, fs.Decide(ctx, "anna", "acme/doc", access.Read))
	}
	// Negative control: the cold read (the first decision's) runs on a
	// goroutine of its own, so the probe can tell the two apart.
	assert.Equal(t, []bool{false}, probe.nodesOnCall, "the cold read runs off the caller's goroutine")
	assert.Equal(t, []bool{true, true}, probe.versionOnCall, "each warm decision reads the version on the caller's goroutine: no goroutine started")
}
