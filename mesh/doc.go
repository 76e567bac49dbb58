// Package mesh defines the mesh: a tree of nodes split into partitions, the
// query language that reads it, and the router that decides which partition
// schemas answer a query.
//
// # Nodes and partitions
//
// A Node lives at a slash-separated Path = Namespace + "/" + ID (or ID at the
// root). The first segment of the path is the node's partition; a store keeps
// each partition in a schema of its own, named by the lower-cased segment.
// Use Node.Normalize to fill and check a node's path fields, and ValidatePath
// to check a path.
//
// # Satellites
//
// A segment starting with _ names a satellite container beside its owner:
// acme/Docs/_Access/g1 is an access grant owned by acme/Docs, stored in the
// "access" table of the acme schema (TableFor, OwnerOf). A _-prefixed first
// segment is a global satellite: _Access/g1 is a root-scope grant, stored in
// a schema named by a registry (DefaultGlobalSatellites). An unregistered one
// has nowhere to live. _Policy is an ordinary node, not a satellite.
//
// # Queries
//
// A query is a string in a GitHub-search style language (see Parse):
//
//	namespace:acme/Docs nodeType:Article -state:deleted name:*report* sort:lastModified-desc
//
// Fields are the node fields (id, namespace, path, name, nodeType, mainNode,
// state, version, lastModified) and content properties, which are always
// written with their prefix: content.title:Foo, sort:content.createdAt-desc,
// select:path,content.title. Any other field name — a misspelling such as
// nodeTyp:Article or sort:nme, or a bare property such as createdAt — is a
// *ParseError whose Field names it and whose Suggestion is the nearest known
// field (nodeType, name) or the content property (content.createdAt): a
// query never silently matches nothing because of a typo. A query with
// select: gets nodes holding only the selected fields and their paths, in
// every frame (Project); it is sorted and limited on the whole nodes.
//
// Parse returns a *Query; its String method gives the canonical form, and
// Matches, Less and NodeTypes give its meaning over nodes, once, for every
// store to share.
//
// # Routing
//
// A query whose anchor names a concrete partition is pinned to that schema. A
// query that names none would have to read every partition schema: the Router
// refuses it with *UnanchoredQueryError unless it declares partitions:all or
// its shape is on the shrink-only allow list (mesh/unanchored-queries.allow).
//
//	router, _ := mesh.NewRouter(mesh.RouterConfig{})
//	q, _ := mesh.Parse("namespace:acme/Docs nodeType:Article")
//	route, err := router.Route(q, knownSchemas) // Pinned, Schemas ["acme"]
//
// # Stores
//
// A Store (memstore in process, pgstore on PostgreSQL) holds the nodes and
// serves live queries; every store passes mesh/meshtest. A store writes only
// what is its own — which partitions it holds and the live read of a routed
// query over them, its Backend — and serves Query through a Querier, which
// parses, routes, answers an unroutable query and fans the backend in with
// the configured Providers, once for every store. The types a reader must
// see whole are gated: SecurityTypes (the access fold's input) always, so
// that a store opened with zero options fails closed, and any others
// declared as RouterConfig.GatedTypes and a store's GatedTypes.
//
// # Names
//
// Names are compared with ASCII case folding only (EqualNames, FoldName);
// partition names are ASCII. See names.go.
//
// # Arguments
//
// A nil where one makes no sense — a nil *Query, clock, io.Reader, a nil
// Provider in a list, a Router or Querier not made ready (nil, zero, or
// missing its Backend) — is an *ArgumentError naming the function and the
// argument, returned, or for a stream delivered at subscription; never a
// panic. memstore and pgstore refuse a nil context or a Store not made by
// their constructor likewise. Subscribing a nil observer still panics:
// there is no one to tell.
//
// # Logging
//
// Every *slog.Logger option of this package (RouterConfig.Logger) may be nil, which
// means slog.Default(): nothing is discarded unless the caller says so.
//
// # Examples
//
// ExampleParse and ExampleRouter_Route (example_test.go) are worked examples,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./mesh/.
package mesh
