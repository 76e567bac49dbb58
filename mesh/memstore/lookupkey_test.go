package memstore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// partition.lookup builds its keys with appendLower, put with
// strings.ToLower: they must agree on every name, or a node put is not
// found. Control: "ÄRGER" and "İ" lower-cased byte by byte (the ASCII rule
// alone) differ from strings.ToLower, so the Unicode fallback is what
// makes them agree.
func TestALookupKeyIsTheLowerCaseThatPutKeysNodesBy(t *testing.T) {
	asciiOnly := func(s string) string {
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			}
		}
		return string(b)
	}
	for _, s := range []string{"", "a", "Instances/Acme", "PLUGINS", "mixed_Case-9.Z", "ÄRGER", "İ", "Ωmega/Node", strings.Repeat("Long", 60)} {
		assert.Equal(t, strings.ToLower(s), string(appendLower(nil, s)), "%q", s)
		assert.Equal(t, "x"+strings.ToLower(s), string(appendLower([]byte("x"), s)), "appends to %q", s)
	}
	assert.NotEqual(t, strings.ToLower("ÄRGER"), asciiOnly("ÄRGER"), "control")
	assert.NotEqual(t, strings.ToLower("İ"), asciiOnly("İ"), "control")
}
