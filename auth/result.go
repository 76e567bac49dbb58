package auth

import "context"

// Result is the outcome of authenticating one request. Exactly one of three
// holds:
//
//   - resolved: Instance is set (Authenticated reports true), with its Grant
//     and the plan-tier Ranks it is decided under;
//   - unauthenticated: Instance is nil and Unavailable is empty. Refused may
//     say why, for logs (a missing or malformed key leaves it empty);
//   - unavailable: Unavailable names the leg that could not be read and why,
//     in fixed words fit for the caller, e.g. "instance: no answer within
//     10s" or "grant: the store is unavailable" (the store's error, which
//     may name its host and user, is logged, not put here). That is "could
//     not find out", never a statement about the key: answer 503, not 401.
type Result struct {
	Instance    *Instance
	Grant       PluginGrant
	Ranks       PlanTierRanks
	Unavailable string
	Refused     string
}

// Authenticated reports whether the request comes from a registered, enabled
// instance whose legs were all read.
func (r Result) Authenticated() bool { return r.Instance != nil && r.Unavailable == "" }

// Allows reports whether the authenticated instance may pull package pkg,
// declaring packageTier, from source: its grant allows it under the ladder
// and the instance's own plan covers the tier. An unauthenticated or
// unavailable Result allows nothing.
func (r Result) Allows(source, pkg, packageTier string) bool {
	if !r.Authenticated() {
		return false
	}
	return r.Grant.Allows(source, pkg, packageTier, r.Ranks, r.Instance.Plan)
}

type resultKey struct{}

// NewContext returns a copy of ctx carrying r, as Middleware does for the
// handler it guards.
func NewContext(ctx context.Context, r Result) context.Context {
	return context.WithValue(ctx, resultKey{}, r)
}

// FromContext returns the Result Middleware resolved for this request, and
// false when there is none (the handler is not behind Middleware).
func FromContext(ctx context.Context) (Result, bool) {
	if ctx == nil {
		return Result{}, false
	}
	r, ok := ctx.Value(resultKey{}).(Result)
	return r, ok
}

// ConfigError reports a value of this package used without a field it
// needs, such as a FoldSource without its Reader, or a nil value or
// context where one is needed: it decides nothing.
type ConfigError struct {
	Setting string // e.g. "FoldSource.Reader"
	Problem string
}

func (e *ConfigError) Error() string { return "auth: " + e.Setting + " " + e.Problem }
