package sqlgen

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// FuzzBuild feeds query strings through mesh.Parse and Build, over one to
// four schemas named after a fuzzed name: Build never panics, refuses only
// with an *InputError, and always writes one statement whose quotes and
// parentheses balance and whose $n each have an argument.
func FuzzBuild(f *testing.F) {
	for _, tc := range equivalenceCases {
		f.Add(tc.query, "acme", uint8(0))
	}
	for _, q := range shapeQueries {
		f.Add(q, `x"; DROP TABLE y; --`, uint8(3))
	}
	f.Add(`name:"it's" content.a.b:"(" -path:x`, `it's`, uint8(1))
	f.Add(`[a/b, "c d"] scope:ancestors name:*)*`, "$1", uint8(2))
	f.Add(`content.$x:"\\" OR version:>1e999`, `a\b`, uint8(1))
	f.Fuzz(func(t *testing.T, query, schema string, fan uint8) {
		q, err := mesh.Parse(query)
		if err != nil {
			return
		}
		schemas := []string{schema}
		for i := range int(fan % 4) {
			schemas = append(schemas, fmt.Sprintf("%s%d", schema, i))
		}
		for _, table := range Tables() {
			sel, err := Build(q, table, schemas)
			if err != nil {
				var ie *InputError
				require.True(t, errors.As(err, &ie), "%v", err)
				return
			}
			checkStatement(t, sel)
		}
	})
}
