package auth

import (
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// The names of the authentication legs: the Stage of their timeouts and the
// first word of Result.Unavailable.
const (
	StageInstanceKey = "instance key"
	StageInstance    = "instance"
	StageGrant       = "grant"
)

// Why a key was refused, as Result.Refused says it.
const (
	RefusedUnknownKey      = "unknown key"
	RefusedRevokedKey      = "key revoked"
	RefusedDisabled        = "instance disabled"
	RefusedUnknownInstance = "instance not registered"
)

// Authenticator resolves an Authorization header to a registered instance.
//
// A header without a well-formed instance key is refused at once, without
// reading the mesh, starting a goroutine or arming a timer. Otherwise three
// live point reads run in order, each bounded by ReadBudget on Clock: the key
// index node (its hash compared in constant time), the instance node (the
// hash checked again against its keyHashes, then its disabled flag), and the
// grant (absent means the empty grant). With a Ladder, the plan tiers follow.
//
// A leg that is absent refuses the key. A leg that could not be read — it
// timed out, a provider stalled, the store failed, its content is unreadable
// — makes the Result unavailable, naming the leg: that is never a 401. With a
// Ladder that cannot be read, the last snapshot is used; only when there is
// none is the Result unavailable.
//
// An Authenticator must not be copied after first use.
type Authenticator struct {
	Mesh mesh.Store
	// Clock bounds the legs; nil means the real clock.
	Clock clock.Clock
	// ReadBudget bounds each leg; zero means DefaultReadBudget.
	ReadBudget time.Duration
	// Ladder, when set, supplies the plan-tier ranks; nil means no tier read
	// and the empty ladder.
	Ladder *PlanTierLadder
	// Logger receives a warning per unavailable result and a debug line per
	// refusal after a read; nil means slog.Default().
	Logger *slog.Logger

	// refusal is the fast 401, built once: answering it allocates nothing.
	refusalOnce sync.Once
	refusal     rx.Observable[Result]
}

// Authenticate returns the outcome for an Authorization header value: one
// Result, then completion. The stream never fails; see Result for the three
// outcomes. It is cold: nothing is read until it is subscribed.
func (a *Authenticator) Authenticate(header string) rx.Observable[Result] {
	key, ok := KeyFromHeader(header)
	if !ok {
		a.refusalOnce.Do(func() { a.refusal = rx.Return(Result{}) })
		return a.refusal
	}
	hash := HashKey(key)
	return rx.Defer(func() rx.Observable[Result] {
		return rx.SelectMany(a.read(StageInstanceKey, KeyIndexPath(hash)), func(l leg) rx.Observable[Result] {
			return a.afterKeyIndex(hash, l)
		})
	})
}

// leg is the outcome of one bounded point read.
type leg struct {
	node    mesh.Node
	present bool
	err     error
}

// read reads path, bounded by the read budget under the name stage, and
// yields exactly one outcome: present, absent, or the error. The outcome is
// sent only once the read has ended, so its bound is disarmed before the
// next leg starts: Take is inside the bound, so the read's end reaches
// Timeout, which disarms before it passes the completion on, and only then
// does Reduce send the outcome (absent, its seed, when no node came).
//
// Four operators and no closure per leg: the legs run on every
// authenticated request, and what they allocate is what the collector
// works through at load.
func (a *Authenticator) read(stage, path string) rx.Observable[leg] {
	read := rx.TimeoutStage(rx.Take(a.Mesh.Get(path), 1), stage, a.readBudget(), a.clock())
	return rx.Catch(rx.Reduce(read, leg{}, presentLeg), failedLeg)
}

func presentLeg(_ leg, n mesh.Node) leg { return leg{node: n, present: true} }

func failedLeg(err error) rx.Observable[leg] { return rx.Return(leg{err: err}) }

func (a *Authenticator) afterKeyIndex(hash string, l leg) rx.Observable[Result] {
	switch {
	case l.err != nil:
		return rx.Return(a.unavailable(StageInstanceKey, hash, l.err))
	case !l.present:
		return rx.Return(a.refused(RefusedUnknownKey, hash))
	}
	idx, err := decodeKeyIndex(l.node)
	if err != nil {
		return rx.Return(a.unavailable(StageInstanceKey, hash, err))
	}
	if !HashesEqual(idx.KeyHash, hash) {
		// Another key whose hash shares the 12-character index id.
		return rx.Return(a.refused(RefusedUnknownKey, hash))
	}
	return rx.SelectMany(a.read(StageInstance, InstancePath(idx.Instance)), func(l leg) rx.Observable[Result] {
		return a.afterInstance(hash, l)
	})
}

func (a *Authenticator) afterInstance(hash string, l leg) rx.Observable[Result] {
	switch {
	case l.err != nil:
		return rx.Return(a.unavailable(StageInstance, hash, l.err))
	case !l.present:
		return rx.Return(a.refused(RefusedUnknownInstance, hash))
	}
	inst, err := decodeInstance(l.node)
	switch {
	case err != nil:
		return rx.Return(a.unavailable(StageInstance, hash, err))
	case !inst.HasKeyHash(hash):
		// The index node outlived a revocation; the instance is the truth.
		return rx.Return(a.refused(RefusedRevokedKey, hash))
	case inst.Disabled:
		return rx.Return(a.refused(RefusedDisabled, hash))
	}
	return rx.SelectMany(a.read(StageGrant, GrantPath(inst.ID)), func(l leg) rx.Observable[Result] {
		return a.afterGrant(hash, inst, l)
	})
}

func (a *Authenticator) afterGrant(hash string, inst *Instance, l leg) rx.Observable[Result] {
	if l.err != nil {
		return rx.Return(a.unavailable(StageGrant, hash, l.err))
	}
	res := Result{Instance: inst, Grant: PluginGrant{InstanceID: inst.ID}}
	if l.present {
		g, bad, err := decodeGrant(l.node, inst.ID)
		if err != nil {
			return rx.Return(a.unavailable(StageGrant, hash, err))
		}
		for _, e := range bad {
			a.logger().Warn("auth: grant entry left out", "instance", inst.ID, "error", e)
		}
		res.Grant = g
	}
	if a.Ladder == nil {
		return rx.Return(res)
	}
	return rx.Map(a.Ladder.read(), func(o ladderOutcome) Result {
		if o.err != nil && !o.stale {
			return a.unavailable(StagePlanTiers, hash, o.err)
		}
		res.Ranks = o.ranks
		return res
	})
}

func (a *Authenticator) refused(reason, hash string) Result {
	a.logger().Debug("auth: instance key refused", "reason", reason, "keyHashPrefix", HashPrefix(hash))
	return Result{Refused: reason}
}

// unavailable names the leg and why it could not be read, without saying the
// leg's name twice when the error already starts with it.
func (a *Authenticator) unavailable(stage, hash string, err error) Result {
	reason := strings.TrimPrefix(err.Error(), stage+": ")
	res := Result{Unavailable: stage + ": " + reason}
	a.logger().Warn("auth: could not find out whether the instance key is valid; answering unavailable, not unauthenticated",
		"stage", stage, "reason", reason, "keyHashPrefix", HashPrefix(hash), "unavailable", mesh.IsUnavailable(err))
	return res
}

func (a *Authenticator) readBudget() time.Duration {
	if a.ReadBudget <= 0 {
		return DefaultReadBudget
	}
	return a.ReadBudget
}

func (a *Authenticator) clock() clock.Clock {
	if a.Clock == nil {
		return clock.New()
	}
	return a.Clock
}

func (a *Authenticator) logger() *slog.Logger { return orDefault(a.Logger) }
