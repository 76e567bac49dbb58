package mesh

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every field of a Node can be selected, by the name a query gives it, and
// a projection to it keeps that field and the path and nothing else. The
// fields are Node's own (by reflection): a field added to Node without a
// select: name, or that Project drops, fails here. Negative control (run):
// with Project's "mainNode" case removed, the mainNode row fails.
func TestEveryFieldOfANodeCanBeSelectedAloneWithItsPath(t *testing.T) {
	n := Node{ID: "a", Namespace: "acme/S", Path: "acme/S/a", NodeType: "Article", Name: "A", MainNode: "acme/S/a",
		Content: json.RawMessage(`{"title":"T"}`), Version: 7, State: 1, LastModified: time.Unix(1e9, 0)}
	typ := reflect.TypeOf(n)
	for i := range typ.NumField() {
		tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		t.Run(tag, func(t *testing.T) {
			canon, ok := canonicalField(tag)
			require.True(t, ok, "Node's field %s has no name a query can select", typ.Field(i).Name)
			p := reflect.ValueOf(Project(n, []string{canon}))
			for j := range typ.NumField() {
				got := p.Field(j).Interface()
				switch {
				case j == i || typ.Field(j).Name == "Path":
					assert.Equal(t, reflect.ValueOf(n).Field(j).Interface(), got, "%s kept", typ.Field(j).Name)
				default:
					assert.True(t, p.Field(j).IsZero(), "%s is not selected but is %v", typ.Field(j).Name, got)
				}
			}
		})
	}
}

func TestAProjectionOfContentKeepsTheSelectedPropertiesAsAQueryMatchesThem(t *testing.T) {
	const content = `{"title":"a <b> & c","Meta":{"owner":"o","size":12345678901234567890123},"tags":[{"k":"x","v":1},2,{"v":3}],"body":"long"}`
	for _, c := range []struct {
		name string
		sel  []string
		want string // "" for no content
	}{
		{"one property, its bytes' meaning kept (no HTML escaping)", []string{"content.title"}, `{"title":"a <b> & c"}`},
		{"a nested property matched case-insensitively, under the stored key", []string{"content.meta.Owner"}, `{"Meta":{"owner":"o"}}`},
		{"two properties of one object merge", []string{"content.meta.owner", "content.meta.size"}, `{"Meta":{"owner":"o","size":12345678901234567890123}}`},
		{"through an array, per element", []string{"content.tags.v"}, `{"tags":[{"v":1},null,{"v":3}]}`},
		{"a whole array", []string{"content.tags"}, `{"tags":[{"k":"x","v":1},2,{"v":3}]}`},
		{"an absent property: no content", []string{"content.missing"}, ""},
		{"content itself wins over its properties", []string{"content.title", "content"}, content},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Project(Node{Path: "acme/a", Content: json.RawMessage(content)}, c.sel)
			if c.want == "" {
				assert.Nil(t, p.Content)
				return
			}
			assert.JSONEq(t, c.want, string(p.Content))
			if strings.Contains(c.want, "size") {
				assert.Contains(t, string(p.Content), "12345678901234567890123", "a number's digits kept")
			}
			if !strings.Contains(c.want, "&") {
				return
			}
			assert.Contains(t, string(p.Content), "<b> &", "not HTML-escaped")
		})
	}
	assert.Nil(t, Project(Node{Path: "a", Content: json.RawMessage(`[1,2]`)}, []string{"content.x"}).Content, "content that is no object holds no property")
	n := Node{Path: "a", Name: "kept"}
	assert.Equal(t, n, Project(n, nil), "no select: the node as it is")
}
