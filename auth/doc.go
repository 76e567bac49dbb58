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
// The pure access fold for mesh permissions lives in the sub-package
// [github.com/meshrx/meshrx/auth/access].
package auth
