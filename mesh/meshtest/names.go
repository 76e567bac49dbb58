package meshtest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// partitionNames checks the name rule on partitions: a partition name is
// ASCII or the write is refused with a *mesh.PathError, and no read spelled
// with a letter that Unicode folds onto an ASCII one (U+212A KELVIN SIGN
// for 'K') reaches the ASCII partition. Negative control: Unicode lower-
// casing, which the stores' schema names used, makes "\u212Aate" "kate".
func (s *suite) partitionNames(t testing.TB, svc mesh.Store) {
	const kelvin = "\u212Aate" // KELVIN SIGN + "ate"
	require.Equal(t, "kate", strings.ToLower(kelvin), "the control: Unicode lower-casing spells kate")
	put(t, svc, node("kate/_Notification/n1", "Notification"))
	put(t, svc, node("Kate/Inbox/n2", "Notification"))

	for _, path := range []string{kelvin + "/_Notification/n3", "caf\u00e9/x", "\u017Fystem/x"} {
		_, err := svc.Put(writeContext(t), node(path, "Notification"))
		var pathErr *mesh.PathError
		assert.ErrorAs(t, err, &pathErr, "a partition name that is not ASCII is refused: %q", path)
	}

	got, err := firstErr(s.bound, svc.Get(kelvin+"/_Notification/n1"))
	assert.Error(t, err, "a Get in a non-ASCII partition finds nothing")
	assert.Empty(t, got.Path)
	for _, q := range []string{"namespace:" + kelvin + "/_Notification", "path:" + kelvin + "/_Notification/n1", "namespace:" + kelvin + " scope:subtree"} {
		ch, err := firstErr(s.bound, svc.Query(q))
		if err == nil {
			assert.Empty(t, ch.Items, "query %s reaches no other partition", q)
		}
	}
	// Control: ASCII case is one partition.
	ch := initialOf(t, s.bound, svc, "namespace:KATE scope:subtree")
	assert.Len(t, ch.Items, 2, "kate and Kate are one partition")
}

// securityCaseVariants checks that two security nodes whose paths differ
// only in case are both in the security materialisation, and that deleting
// one leaves the other: folding their paths into one key would drop a deny
// (a policy cap, an assigned deny) and fail open. It checks the security
// types with zero configuration: every store gates mesh.SecurityTypes.
// Negative control: the two paths are two nodes to Get.
func (s *suite) securityCaseVariants(t testing.TB, svc mesh.Store) {
	reader, ok := svc.(mesh.SecurityReader)
	if !ok {
		t.Skip("the store keeps no security materialisation")
	}
	ctx := writeContext(t)
	count := func() int {
		snap, err := reader.SecurityNodes(ctx)
		require.NoError(t, err)
		require.True(t, snap.Declares(mesh.PartitionAccessPolicyType), "a store gates the security types by default")
		n := 0
		for _, node := range snap.Nodes {
			if mesh.EqualNames(node.Path, "acme/Docs/_Policy") {
				n++
			}
		}
		return n
	}
	put(t, svc, withContent(node("acme/Docs/_Policy", mesh.PartitionAccessPolicyType), `{"update":false}`))
	put(t, svc, withContent(node("acme/docs/_Policy", mesh.PartitionAccessPolicyType), `{}`))
	require.NotEqual(t, firstOf(t, s.bound, "get", svc.Get("acme/Docs/_Policy")).Content, firstOf(t, s.bound, "get", svc.Get("acme/docs/_Policy")).Content,
		"control: two nodes")
	assert.Equal(t, 2, count(), "both policies are in the materialisation")
	del(t, svc, "acme/docs/_Policy")
	assert.Equal(t, 1, count(), "deleting one leaves the other")
}

// reservedPartitionNames: a partition name PostgreSQL cannot give a schema
// of its own (pg_..., public, information_schema, past 63 bytes, where it
// would be truncated onto another name) is refused by every store, and
// writes nothing: code written against the embedded store must not meet
// its first refusal in production.
func (s *suite) reservedPartitionNames(t testing.TB, svc mesh.Store) {
	for _, path := range []string{"pg_x/a", "PG_Temp/a", "public/a", "Information_Schema/a",
		strings.Repeat("p", 64) + "/a"} {
		_, err := svc.Put(writeContext(t), node(path, "Article"))
		assert.Error(t, err, "put %s: the partition name is refused", path)
		assert.False(t, mesh.IsUnavailable(err), "put %s: the name is the caller's error: %v", path, err)
		_, err = firstErr(s.bound, svc.Get(path))
		assert.ErrorIs(t, err, rx.ErrEmpty, "get %s: the refused write stored nothing", path)
	}
	// Controls: at the bound, and pg or public inside a longer name.
	for _, path := range []string{strings.Repeat("p", 63) + "/a", "pgx/a", "publics/a", "acme/public"} {
		put(t, svc, node(path, "Article"))
	}
}
