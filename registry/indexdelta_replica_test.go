package registry

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/internal/testkit"
)

// A digest is content, not one server's generation number: a consumer that
// moves to another replica over the same records (a restarted one, or one
// behind the same load balancer) which assembled the same document keeps
// asking deltas there: the next publication is one delta, no whole index.
// Control: moved to a replica that never assembled its document (a
// publication later), it gets a 410 and fetches the whole index once.
func TestAConsumerMovingToAReplicaThatBuiltTheSameDocumentKeepsItsDeltas(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/*")
	c, counted := f.consumer(key)
	_, tag, err := indexVia(t, c, "")
	require.NoError(t, err)

	replica := func() *Server {
		s, err := NewServer(ServerOptions{Served: f.served, Mesh: f.mesh, Clock: f.clk, Metrics: prometheus.NewRegistry(),
			Auth: &auth.Authenticator{Mesh: f.mesh, Clock: f.clk, Ladder: &auth.PlanTierLadder{Mesh: f.mesh, Clock: f.clk}}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close(t.Context()) })
		return s
	}
	knows := func(s *Server, plugins ...string) {
		t.Helper()
		require.Eventually(t, func() bool {
			st, ok := s.catalog.current()
			if !ok {
				return false
			}
			for _, p := range plugins {
				if st.lookup(p).unreadable {
					return false
				}
			}
			return true
		}, testkit.Bound, time.Millisecond, "the replica's catalog knows %v", plugins)
	}
	warm := replica()
	knows(warm, "A")
	wh := warm.Handler()
	// Another consumer of the entitlement has the replica assemble the document.
	other, otherCounted := f.consumer(key)
	otherCounted.h.Store(&wh)
	_, otherTag, err := indexVia(t, other, "")
	require.NoError(t, err)
	require.Equal(t, tag, otherTag, "the same document")

	counted.h.Store(&wh)
	f.publish("B", "1.0.0", "")
	knows(warm, "A", "B")
	idx, tag, err := indexVia(t, c, tag)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"A": "1.0.0", "B": "1.0.0"}, listed(idx))
	deltas, fulls := counted.requests()
	assert.Equal(t, [2]int64{1, 1}, [2]int64{deltas, fulls}, "one delta from the replica, no whole index")

	// Control: a replica that never assembled the consumer's document.
	cold := replica()
	f.publish("C", "1.0.0", "")
	knows(cold, "A", "B", "C")
	ch := cold.Handler()
	counted.h.Store(&ch)
	idx, _, err = indexVia(t, c, tag)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"A": "1.0.0", "B": "1.0.0", "C": "1.0.0"}, listed(idx))
	deltas, fulls = counted.requests()
	assert.Equal(t, [2]int64{2, 2}, [2]int64{deltas, fulls}, "control: a 410, then the whole index")
}
