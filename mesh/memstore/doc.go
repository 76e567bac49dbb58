// Package memstore is the embedded mesh store: every partition kept in
// process memory, no setup, the same behaviour as the PostgreSQL store
// (both pass mesh/meshtest).
//
// Each partition schema holds its nodes in a tree of namespaces, so a pinned
// read touches one partition, a children query reads one namespace and a
// descendants query walks one subtree; nothing scans a partition it need not.
//
// Queries are live. Live queries are filed by the partitions they read,
// the node types they name and the place their anchor looks, so a write
// visits only the queries filed under its partition, its node's type and
// its path (plus the few that read every partition or look anywhere): its
// cost does not grow with the number of live queries. A query whose node
// types, partitions or anchor cannot include the written node is not
// matched at all; Stats counts both outcomes, the unvisited pairs among
// the skipped. Subscribing and unsubscribing cost O(1) in the number of
// live queries (see docs/live-queries.md for figures).
//
// Writers never wait on readers. A write queues its frames and returns; each
// live query (and each Changes subscription) is delivered from its own
// bounded queue by a goroutine that runs only while the queue is not empty,
// in write order, outside the store's locks, so an observer may read from or
// write to the store inside OnNext. A subscriber that falls more than
// Options.QueueFrames behind has its pending frames collapsed into one Reset
// carrying the result current when it catches up: its memory stays bounded,
// it loses nothing, and no writer or other subscriber notices it. A query
// with a limit keeps its first N: a write that matches it is read again
// by its delivery goroutine (once for the writes queued meanwhile), which
// sends what entered, changed in or left the first N. Settle
// waits for every subscriber to catch up. The one wait a write has, for the
// store's lock while a read holds it (a live query's full answer is read
// under it, and sorted after), is bounded by the write's context.
//
//	s, _ := memstore.New(memstore.Options{})
//	defer s.Close()
//	s.Put(ctx, mesh.Node{Path: "acme/Docs/intro", NodeType: "Article"})
//	first, err := rx.First(ctx, s.Query("namespace:acme/Docs nodeType:Article"))
//
// # Logging
//
// Every *slog.Logger option of this package (Options.Logger) may be nil, which
// means slog.Default(): nothing is discarded unless the caller says so.
//
// # Examples
//
// Example and ExampleStore_Query (example_test.go) are worked examples,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./mesh/memstore/.
package memstore
