package meshtest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
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
