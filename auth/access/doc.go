// Package access computes what a user may do at a mesh path: the access
// fold over roles, transitive group memberships, role assignments with deny,
// and per-scope policies.
//
// Everything here is pure and in memory. A [Fold] is built once from a
// complete [Snapshot] of the four security legs and then answers
// [Fold.Effective] and [Fold.Decide] for any user and path, concurrently and
// without further reads.
//
// A Snapshot must never be paged or narrowed. A short read of memberships or
// assignments is not a smaller answer but a wrong one: a missing membership
// can drop the group whose deny was decisive, so the fold fails open. A caller
// that could not read the legs in full has no Fold, and a missing Fold decides
// [Undetermined], which denies.
//
// # Examples
//
// ExampleFold_Decide (example_test.go) is a worked example,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./auth/access/.
package access
