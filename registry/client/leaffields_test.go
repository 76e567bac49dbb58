package client

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every field of an index entry is in its leaf: changing any one of them
// changes the digest, so the digest covers everything a consumer holds of
// an entry. The fields are listed by reflection: a field added to
// IndexEntry and left out of the leaf fails here. Control run: leafOf
// without the URL fails it ("field URL is not in the leaf").
func TestEveryFieldOfAnIndexEntryIsInItsLeaf(t *testing.T) {
	base := IndexEntry{Plugin: "Acme.A", Version: "1.0.0", URL: "/api/plugins/bundles/Acme.A/1.0.0", SHA256: "ab"}
	typ := reflect.TypeFor[IndexEntry]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		require.Equal(t, reflect.String, f.Type.Kind(), "field %s: extend this test for its kind", f.Name)
		changed := base
		v := reflect.ValueOf(&changed).Elem().Field(i)
		v.SetString(v.String() + "x")
		assert.NotEqual(t, leafOf(base), leafOf(changed), "field %s is not in the leaf", f.Name)
	}
}
