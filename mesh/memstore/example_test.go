package memstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx"
)

func Example() {
	s, err := memstore.New(memstore.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, n := range []mesh.Node{
		{Path: "acme/Docs/intro", NodeType: "Article", Name: "Introduction"},
		{Path: "acme/Docs/setup", NodeType: "Article", Name: "Setup"},
		{Path: "acme/Docs/logo", NodeType: "Image", Name: "Logo"},
		{Path: "acme/Docs/_Access/g1", NodeType: "AccessAssignment"},
	} {
		if _, err := s.Put(ctx, n); err != nil {
			panic(err)
		}
	}

	initial, err := rx.First(ctx, s.Query("namespace:acme/Docs nodeType:Article sort:name-desc"))
	if err != nil {
		panic(err)
	}
	fmt.Println(initial.Kind, "from", initial.Partitions)
	for _, n := range initial.Items {
		fmt.Printf("%s %q v%d\n", n.Path, n.Name, n.Version)
	}
	// Output:
	// initial from [acme]
	// acme/Docs/setup "Setup" v1
	// acme/Docs/intro "Introduction" v1
}

// A live query read as a Go loop: the first frame is the full result, then
// one frame per write that concerns the query, until the loop breaks (which
// unsubscribes) or ctx ends.
func ExampleStore_Query() {
	store, err := memstore.New(memstore.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := store.Put(ctx, mesh.Node{Path: "acme/Docs/intro", NodeType: "Article", Name: "Introduction"}); err != nil {
		panic(err)
	}

	q := "namespace:acme/Docs nodeType:Article"
	for c, err := range rx.All(ctx, store.Query(q)) {
		if err != nil {
			fmt.Println("query ended:", err)
			break
		}
		for _, n := range c.Items {
			fmt.Println(c.Kind, n.Path)
		}
		if c.Kind != mesh.Initial {
			break // unsubscribes the live query
		}
		// A write while the loop runs arrives as the next frame.
		if _, err := store.Put(ctx, mesh.Node{Path: "acme/Docs/setup", NodeType: "Article", Name: "Setup"}); err != nil {
			panic(err)
		}
	}
	// Output:
	// initial acme/Docs/intro
	// added acme/Docs/setup
}
