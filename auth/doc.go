// Package auth decides who a registry caller is and what it may pull.
//
// A registered instance presents an instance key ("mwi_" followed by 43
// base62 characters) as a Bearer token, or as the password of a Basic
// credential for clients that cannot send Bearer. Only the SHA-256 hash of a
// key is ever stored; the index node that finds an instance is keyed by the
// first 12 hex characters of that hash, and hashes are compared in constant
// time.
//
// What an instance may pull is its [PluginGrant], a list of
// Source/Package[@plan] entries, read against the plan-tier ladder
// ([PlanTierRanks]). Unknown plans and unknown package tiers license nothing:
// a typo must never widen a licence.
//
// The HTTP answers keep two outcomes apart that must never be confused: a
// caller without a usable key gets 401 ([WriteUnauthenticated]) at once and
// without touching storage, while a caller whose key could not be checked
// gets 503 with Retry-After ([WriteUnavailable]), whose body says plainly
// that it is not a statement about the key. A fault never becomes a fact.
//
// # Reading the mesh
//
// The instances, their key index, their grants and the plan tiers are mesh
// nodes ([Instances] writes them, each change to an instance a compare-and-set
// on its node's version, so replicas lose nothing). An [Authenticator] turns an Authorization
// header into a [Result]: a missing or malformed key answers synchronously,
// with no read; otherwise three live legs run in turn — instance key,
// instance, grant — each bounded by ReadBudget with a stage-named timeout on
// the injected clock, then the cached [PlanTierLadder]. A leg that cannot
// answer makes the Result unavailable and names the leg; only an absent key,
// instance or a disabled one makes it unauthenticated. [Middleware] maps the
// three outcomes onto 401, 503 and the handler.
//
// Permissions come from the access fold over the security nodes the store
// maintains on its write path ([mesh.SecurityReader]): [FoldSource] never
// pages or narrows them, rebuilds the fold only when they change (a warm
// decision reads only their version, [mesh.SecurityVersioner]), and a fold
// it could not read decides Undetermined, which denies. The pure fold lives
// in the sub-package [github.com/meshrx/meshrx/auth/access].
//
// # Logging
//
// Every *slog.Logger option of this package (Authenticator.Logger, FoldSource.Logger, PlanTierLadder.Logger) may be nil, which
// means slog.Default(): nothing is discarded unless the caller says so.
//
// # Examples
//
// Example and ExampleRequire (example_test.go) are worked examples,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./auth/.
package auth
