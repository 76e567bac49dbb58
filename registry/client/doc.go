// Package client consumes a plugin registry: a [Client] fetches the index
// and bundles with bounded attempts that honour Retry-After, and verifies
// each bundle against the sha256 the index lists; a [Reconciler] polls it
// and hands new versions to its Apply, and when it cannot it leaves a mark
// an operator reads: its Status, its StatusGauges (package clientmetrics
// mirrors them in Prometheus) and one warning per transition into failure.
//
// [Index] and [IndexEntry] are the wire types the registry serves at
// [IndexPath]. The package imports neither the server nor Prometheus. A nil
// *slog.Logger means slog.Default().
//
// # Examples
//
// Example and ExampleClient_Publish (example_test.go) are worked examples,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./registry/client/.
package client
