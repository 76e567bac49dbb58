package notifications_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

// viewersSpelledAsQuerySyntax are partition names (mesh.ValidatePath takes
// them, and the stores keep them) that, pasted bare into a query, would be
// query syntax reaching alice's partition: an alternation, a scope and a
// free-text term.
var viewersSpelledAsQuerySyntax = []string{"eve|alice", "alice scope:subtree alice", `eve" OR namespace:alice`}

// BellQuery and RetentionQuery pasted the addressee into the query bare:
// the bell of the viewer "eve|alice" read namespace eve OR
// alice/_Notification, and "alice scope:subtree alice" read alice's whole
// partition, so both showed alice's notifications. Control run: with the
// addressee pasted bare again, both stores show alice's notification to
// "eve|alice" and to "alice scope:subtree alice", the third viewer's bell
// fails to parse, and the routing check fails for all three (a fan-out
// over eve and alice, a read pinned to alice, a parse error).
func TestAViewerWhoseNameIsQuerySyntaxSeesOnlyItsOwnPartition(t *testing.T) {
	t.Run("routing", func(t *testing.T) {
		router, err := mesh.NewRouter(mesh.RouterConfig{})
		require.NoError(t, err)
		for _, v := range viewersSpelledAsQuerySyntax {
			for _, q := range []string{notifications.BellQuery(v), notifications.RetentionQuery(v, 7)} {
				parsed, err := mesh.Parse(q)
				if !assert.NoError(t, err, q) {
					continue
				}
				r, err := router.Route(parsed, []string{"alice", mesh.SchemaOf(v)})
				require.NoError(t, err, q)
				assert.Equal(t, mesh.Pinned, r.Kind, q)
				assert.Equal(t, []string{mesh.SchemaOf(v)}, r.Schemas, q)
			}
		}
	})
	eachStore(t, func(t *testing.T, fx fixture) {
		svc := fx.service()
		_, err := svc.Create(ctx(t), notifications.Notification{Title: "for alice only"}, "alice")
		require.NoError(t, err)
		for _, v := range viewersSpelledAsQuerySyntax {
			_, err := svc.Create(ctx(t), notifications.Notification{Title: "for " + v}, v)
			require.NoError(t, err, v)
			st, err := rx.First(ctx(t), svc.Bell(v))
			if !assert.NoError(t, err, v) {
				continue
			}
			assert.Equal(t, []string{"for " + v}, titles(st), "the bell of %q shows its own notification and nobody else's", v)
		}
	})
}
