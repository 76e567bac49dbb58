package registry

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
)

// BenchmarkAPublicationBesidePackages publishes a new version of one
// package beside 100 and 4,000 other packages, through the real HTTP
// server on the embedded store: the time per publication must not grow
// with the number of packages. Figures and command: docs/security.md.
func BenchmarkAPublicationBesidePackages(b *testing.B) {
	for _, packages := range []int{100, 4000} {
		b.Run(fmt.Sprintf("packages=%d", packages), func(b *testing.B) {
			f := newFixture(b, fixtureOptions{})
			for i := range packages - 1 {
				name := fmt.Sprintf("Other.P%05d", i)
				_, err := f.store.Put(b.Context(), mesh.Node{Path: DefaultSource + "/" + name, NodeType: PackageNodeType, Name: name, Content: []byte(`{"tier":""}`)})
				if err != nil {
					b.Fatal(err)
				}
			}
			f.putPackage(mesh.Node{Path: DefaultSource + "/Other.Last", NodeType: PackageNodeType, Name: "Other.Last"})
			archives := make([][]byte, b.N)
			for i := range archives {
				archives[i] = testkit.ModuleArchive(b, "Bench.Pkg", fmt.Sprintf("1.0.%d", i), 1)
			}
			b.ResetTimer()
			for i := range b.N {
				got := f.do(publishRequest("Bench.Pkg", fmt.Sprintf("?version=1.0.%d", i), testPublishToken, archives[i]))
				if got.status != http.StatusCreated {
					b.Fatalf("publication %d: %d %s", i, got.status, got.body)
				}
			}
		})
	}
}
