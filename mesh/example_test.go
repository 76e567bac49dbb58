package mesh_test

import (
	"errors"
	"fmt"

	"github.com/meshrx/meshrx/mesh"
)

func ExampleParse() {
	q, err := mesh.Parse(`namespace:acme/Docs nodeType:Article -state:deleted name:*report* sort:lastModified-desc`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(q.Path, q.Scope)
	fmt.Println(q)
	fmt.Println(q.Matches(mesh.Node{Path: "acme/Docs/q3", NodeType: "Article", Name: "Quarterly Report"}))

	_, err = mesh.Parse(`nodeType:Article scope:sideways`)
	fmt.Println(err)
	// Output:
	// acme/Docs children
	// path:acme/Docs scope:children nodeType:Article -state:deleted name:*report* sort:lastModified-desc
	// true
	// mesh: query: at offset 23 near "sideways": unknown scope "sideways"; use one of exact, children, descendants, subtree, ancestors, hierarchy
}

func ExampleRouter_Route() {
	router, err := mesh.NewRouter(mesh.RouterConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	schemas := []string{"acme", "admin", "rbuergi"}
	for _, s := range []string{
		"namespace:rbuergi/_Notification nodeType:Notification", // the viewer's own partition
		"namespace:_Access nodeType:AccessAssignment",           // a registered global satellite
		"path:_Policy nodeType:PartitionAccessPolicy",           // an unregistered one
		"nodeType:Role partitions:all",                          // a declared mesh-wide read
		"nodeType:Notification",                                 // names no partition
	} {
		q, err := mesh.Parse(s)
		if err != nil {
			fmt.Println(err)
			return
		}
		route, err := router.Route(q, schemas)
		var refused *mesh.UnanchoredQueryError
		if errors.As(err, &refused) {
			fmt.Printf("%-10s refused, shape %q\n", route.Kind, refused.Shape)
			continue
		}
		fmt.Printf("%-10s %v\n", route.Kind, route.Schemas)
	}
	// Output:
	// pinned     [rbuergi]
	// pinned     [system_access]
	// unroutable []
	// fan-out    [acme admin rbuergi]
	// fan-out    refused, shape "nodeType:Notification path:- scope:exact"
}
