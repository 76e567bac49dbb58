package mesh

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheZeroStateIsActive(t *testing.T) {
	var s State
	assert.Equal(t, StateActive, s)
	assert.Equal(t, "active", s.String())
}

func TestAStateEncodesAsItsLowerCaseNameAndDecodesCaseInsensitively(t *testing.T) {
	names := map[State]string{StateActive: "active", StateNew: "new", StateTransient: "transient",
		StateRejected: "rejected", StateDeleted: "deleted"}
	for s, name := range names {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		assert.Equal(t, `"`+name+`"`, string(b))
		var back State
		require.NoError(t, json.Unmarshal([]byte(`"`+string(name[0]-32)+name[1:]+`"`), &back))
		assert.Equal(t, s, back)
	}
	var s State
	err := json.Unmarshal([]byte(`"archived"`), &s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown node state "archived"`)
	_, err = json.Marshal(State(9))
	assert.Error(t, err, "a state with no name cannot be encoded")
	assert.Equal(t, "state(9)", State(9).String())
}

func TestNodeJSONUsesCamelCaseFieldNames(t *testing.T) {
	n := Node{ID: "a", Namespace: "acme", Path: "acme/a", NodeType: "Article", Name: "A", MainNode: "acme/a",
		Content: json.RawMessage(`{"x":1}`), Version: 3, State: StateDeleted,
		LastModified: time.Date(2026, 8, 31, 18, 30, 0, 0, time.UTC)}
	b, err := json.Marshal(n)
	require.NoError(t, err)
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &fields))
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	assert.Equal(t, []string{"content", "id", "lastModified", "mainNode", "name", "namespace", "nodeType", "path", "state", "version"}, keys)
	assert.JSONEq(t, `"deleted"`, string(fields["state"]))
	var back Node
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, n, back)
}

func TestNormalizeFillsThePathFieldsAndDefaultsTheMainNode(t *testing.T) {
	cases := []struct {
		name string
		in   Node
		want Node
	}{
		{"path from namespace and id", Node{Namespace: "acme/Docs", ID: "a"},
			Node{Namespace: "acme/Docs", ID: "a", Path: "acme/Docs/a", MainNode: "acme/Docs/a"}},
		{"namespace and id from path", Node{Path: "acme/Docs/a"},
			Node{Namespace: "acme/Docs", ID: "a", Path: "acme/Docs/a", MainNode: "acme/Docs/a"}},
		{"root node", Node{ID: "acme"}, Node{ID: "acme", Path: "acme", MainNode: "acme"}},
		{"satellite is owned by its owner", Node{Path: "acme/Docs/_Access/g1"},
			Node{Namespace: "acme/Docs/_Access", ID: "g1", Path: "acme/Docs/_Access/g1", MainNode: "acme/Docs"}},
		{"global satellite owns itself", Node{Path: "_Access/g1"},
			Node{Namespace: "_Access", ID: "g1", Path: "_Access/g1", MainNode: "_Access/g1"}},
		{"explicit main node is kept", Node{Path: "rbuergi/_Notification/n1", MainNode: "rbuergi"},
			Node{Namespace: "rbuergi/_Notification", ID: "n1", Path: "rbuergi/_Notification/n1", MainNode: "rbuergi"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.in.Normalize()
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
			again, err := got.Normalize()
			require.NoError(t, err)
			assert.Equal(t, got, again, "normalizing twice changes nothing")
		})
	}
}

func TestNormalizeRefusesInconsistentOrInvalidNodes(t *testing.T) {
	cases := []struct {
		name      string
		bad, good Node // good is bad with the fault removed: the negative control
		field     string
		pathErr   bool
	}{
		{"no id or path", Node{Namespace: "acme"}, Node{Namespace: "acme", ID: "a"}, "id", false},
		{"id with a slash", Node{ID: "a/b"}, Node{Namespace: "a", ID: "b"}, "id", false},
		{"id disagrees with path", Node{Path: "acme/a", ID: "b"}, Node{Path: "acme/a", ID: "a"}, "id", false},
		{"namespace disagrees with path", Node{Path: "acme/a", Namespace: "beta"}, Node{Path: "acme/a", Namespace: "acme"}, "namespace", false},
		{"bad path", Node{Path: "acme//a"}, Node{Path: "acme/a"}, "path", true},
		{"bad main node", Node{Path: "acme/a", MainNode: "/acme"}, Node{Path: "acme/a", MainNode: "acme"}, "mainNode", true},
		{"content not JSON", Node{Path: "acme/a", Content: json.RawMessage(`{"x":`)}, Node{Path: "acme/a", Content: json.RawMessage(`{"x":1}`)}, "content", false},
		{"negative version", Node{Path: "acme/a", Version: -1}, Node{Path: "acme/a", Version: 1}, "version", false},
		{"unknown state", Node{Path: "acme/a", State: State(7)}, Node{Path: "acme/a", State: StateDeleted}, "state", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.bad.Normalize()
			var ne *NodeError
			require.True(t, errors.As(err, &ne), "want a *NodeError, got %v", err)
			assert.Equal(t, c.field, ne.Field)
			var pe *PathError
			assert.Equal(t, c.pathErr, errors.As(err, &pe), "wraps a *PathError: %v", err)
			_, err = c.good.Normalize()
			assert.NoError(t, err)
		})
	}
}
