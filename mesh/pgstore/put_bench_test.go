package pgstore

import (
	"fmt"
	"testing"

	"github.com/meshrx/meshrx/mesh"
)

// BenchmarkPut times one Put that changes an existing node, through the
// store's triggers (the notice row, the security fold's type checks), for
// a node of an ungated type and one of a gated type (mesh.RoleType, folded
// into public.security_fold). Each iteration writes a new content, so every
// Put is a visible change.
//
//	go test -run '^$' -bench 'Put$' -benchtime 2000x -count 6 ./mesh/pgstore/
func BenchmarkPut(b *testing.B) {
	for _, typ := range []string{"Article", mesh.RoleType} {
		b.Run("type="+typ, func(b *testing.B) {
			ctx := b.Context()
			s := openBenchStore(b)
			path := "bench/Docs/" + typ
			if _, err := s.Put(ctx, mesh.Node{Path: path, NodeType: typ, Name: "0"}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Put(ctx, mesh.Node{Path: path, NodeType: typ, Name: fmt.Sprint(i + 1)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
