package mesh

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAShapeNamesTheSingleNodeTypeTheAnchorPathAndTheScope(t *testing.T) {
	cases := map[string]string{
		"nodeType:Notification":                               "nodeType:Notification path:- scope:exact",
		"namespace:acme/x nodeType:A -state:deleted":          "nodeType:A path:acme/x scope:children",
		"path:acme scope:SUBTREE nodeType:A":                  "nodeType:A path:acme scope:subtree",
		"[acme/a, beta/b] nodeType:A":                         "nodeType:A path:acme/a|beta/b scope:exact",
		"nodeType:A|B":                                        "nodeType:* path:- scope:exact",
		"nodeType:A nodeType:B":                               "nodeType:* path:- scope:exact",
		"nodeType:A*":                                         "nodeType:* path:- scope:exact",
		"-nodeType:A":                                         "nodeType:* path:- scope:exact",
		"nodeType:A OR nodeType:B":                            "nodeType:* path:- scope:exact",
		"(nodeType:A content.x:1) OR content.x:2":             "nodeType:* path:- scope:exact",
		"content.x:1 (content.y:1 OR content.y:2) nodeType:A": "nodeType:A path:- scope:exact",
		"": "nodeType:* path:- scope:exact",
		"namespace:rbuergi/_Notification nodeType:Notification sort:content.createdAt-desc limit:5": "nodeType:Notification path:rbuergi/_Notification scope:children",
	}
	for query, want := range cases {
		assert.Equal(t, want, DescribeShape(mustParse(t, query)), query)
	}
	// Control: sort, limit, select and text do not change a shape, but the
	// scope does.
	assert.Equal(t, DescribeShape(mustParse(t, "nodeType:A")), DescribeShape(mustParse(t, "nodeType:A sort:name limit:3 select:path x")))
	assert.NotEqual(t, DescribeShape(mustParse(t, "nodeType:A")), DescribeShape(mustParse(t, "nodeType:A scope:children")))
	assert.Equal(t, "nodeType:* path:- scope:exact", DescribeShape(nil))
}
