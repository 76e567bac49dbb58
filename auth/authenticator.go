package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
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
// A key that authenticated before skips the index read while its instance
// still lists it, and a node read again with the content it had is not
// decoded again (see authMemo): every request still reads the instance and
// its grant, so a revocation, a disabled instance or a changed grant is
// honoured by the first request that can read it, as without the memo.
// For a known key the instance's key list decides, not the index node: an
// index node edited by hand to name another instance, while the first
// still lists the hash, is not followed until the first drops it (the
// Instances functions never write that state: they remove a hash from its
// instance before its index node).
// On a store that gates DecisionTypes, AuthenticateNow answers a key that
// authenticated from the decision kept for it while the store's security
// version is the one read before that decision's legs (see DecisionTypes):
// it reads that version once, on its caller's context, and runs the legs
// when it moved or could not be read. Each leg reads only a node of its
// own type (the key index, the instance, the grant: the types a store
// gates); a node of another type at its path is absent to it, so a write
// the version does not see cannot change what the legs decide.
// The Result's Instance is the request's own copy; its KeyHashes and its
// Grant's Entries may be shared with other Results and must not be
// modified.
//
// A leg that is absent refuses the key. A leg that could not be read — it
// timed out, a provider stalled, the store failed, its content is unreadable
// — makes the Result unavailable, naming the leg: that is never a 401. With a
// Ladder that cannot be read, the last snapshot is used; only when there is
// none is the Result unavailable.
//
// An Authenticator must not be copied, nor its Mesh changed, after first
// use.
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

	memo      authMemo      // bounded: see authMemo
	decisions decisionCache // bounded: see decisionCache
}

// Authenticate returns the outcome for an Authorization header value: one
// Result, then completion. The stream never fails; see Result for the three
// outcomes. It is cold: nothing is read until it is subscribed. It runs the
// legs: a kept decision (see DecisionTypes) is used only by
// AuthenticateNow, which reads the security version on its caller's
// context.
//
// Authenticate panics, naming the field, when a's Mesh is nil: a zero
// Authenticator cannot check a key, and would otherwise fail deep inside
// its first read.
func (a *Authenticator) Authenticate(header string) rx.Observable[Result] {
	if a.Mesh == nil {
		panic("auth: Authenticator.Mesh is nil (a zero Authenticator cannot check keys; set Mesh to the store holding the instances)")
	}
	key, ok := KeyFromHeader(header)
	if !ok {
		a.refusalOnce.Do(func() { a.refusal = rx.Return(Result{}) })
		return a.refusal
	}
	digest := keyDigest(key)
	return a.legs(hexDigest(&digest), &digest, mesh.SecurityVersion{}, false)
}

// AuthenticateNow decides for header what Authenticate would, reading the
// store's security version at most once, on ctx, when that can spare the
// legs: for a key that authenticated before (a decision kept for it, or
// its instance in the memo) on a store that gates DecisionTypes, bounded by
// ReadBudget, by within when that is shorter (a caller with a budget of its
// own passes what is left of it), and by ctx; within <= 0, or a nil ctx,
// reads nothing.
// An unknown key reads no version: it costs what Authenticate costs.
//
// When legs is nil, res is the answer, decided on the caller's goroutine:
// a header without a well-formed key (refused, reading nothing), or a key
// whose kept decision is at the version read, with the Ladder's ranks at
// hand (nil Ladder, or its cache fresh). Otherwise res is zero and legs is
// the cold stream that decides, as Authenticate's does, without reading
// the version again: it runs the legs (and keeps their decision at the
// version read), or, for a kept decision, only reads the ladder.
//
// It panics, as Authenticate does, when a's Mesh is nil.
func (a *Authenticator) AuthenticateNow(ctx context.Context, header string, within time.Duration) (res Result, legs rx.Observable[Result]) {
	if a.Mesh == nil {
		panic("auth: Authenticator.Mesh is nil (a zero Authenticator cannot check keys; set Mesh to the store holding the instances)")
	}
	key, ok := KeyFromHeader(header)
	if !ok {
		return Result{}, nil
	}
	digest := keyDigest(key)
	var hash string
	seen := a.decisions.has(&digest)
	if !seen {
		hash = hexDigest(&digest)
		_, seen = a.memo.instanceOf(hash)
	}
	var version mesh.SecurityVersion
	keep := false
	if seen && within > 0 && ctx != nil {
		version, keep = a.securityVersion(ctx, min(within, a.readBudget()))
	}
	if keep {
		if res, ok := a.decisions.decided(&digest, version); ok {
			if a.Ladder == nil {
				return res, nil
			}
			if res.Ranks, ok = a.Ladder.now(); ok {
				return res, nil
			}
			d := digest // escapes with the stream; digest stays on the stack
			return Result{}, a.withRanks(res, &d)
		}
	}
	if hash == "" {
		hash = hexDigest(&digest)
	}
	return Result{}, a.legs(hash, &digest, version, keep)
}

// legs is the cold stream of the legs for the key of digest (hash its hex);
// when keep, what they decide is kept at version, read before them.
func (a *Authenticator) legs(hash string, digest *[32]byte, version mesh.SecurityVersion, keep bool) rx.Observable[Result] {
	d := *digest
	return rx.Defer(func() rx.Observable[Result] {
		r := &authentication{a: a, hash: hash, digest: d, version: version, keep: keep}
		return r.run()
	})
}

// run starts the legs: from the instance when the memo names it, else from
// the key index node.
func (r *authentication) run() rx.Observable[Result] {
	a := r.a
	if id, ok := a.memo.instanceOf(r.hash); ok {
		// A key that authenticated as id: its instance is the truth.
		r.known = true
		r.leg.Store(1)
		return rx.Catch(rx.SelectMany(readLeg(a, StageInstance, InstancePath(id), InstanceNodeType, instanceLeg), r.afterInstance), r.unreadable)
	}
	return rx.Catch(r.fromKeyIndex(), r.unreadable)
}

// withRanks is res with the Ladder's ranks: at once when they are at hand,
// else once the ladder is read (an unreadable ladder with no snapshot makes
// the Result unavailable, logged with the prefix of digest's hash).
func (a *Authenticator) withRanks(res Result, digest *[32]byte) rx.Observable[Result] {
	if a.Ladder == nil {
		return rx.Return(res)
	}
	if ranks, ok := a.Ladder.now(); ok {
		res.Ranks = ranks
		return rx.Return(res)
	}
	return rx.Map(a.Ladder.read(), func(o ladderOutcome) Result {
		if o.err != nil && !o.stale {
			return a.unavailable(StagePlanTiers, hexDigest(digest), o.err)
		}
		res.Ranks = o.ranks
		return res
	})
}

// fromKeyIndex runs the legs from the key index node.
func (r *authentication) fromKeyIndex() rx.Observable[Result] {
	return rx.SelectMany(readLeg(r.a, StageInstanceKey, KeyIndexPath(r.hash), KeyIndexNodeType, keyIndexLeg), r.afterKeyIndex)
}

// authentication is one run of the legs for one key. A leg that cannot be
// read fails the run's stream, which one Catch turns into the Result that
// names the leg then being read: the legs run one after the other.
type authentication struct {
	a       *Authenticator
	hash    string
	digest  [32]byte             // the key's SHA-256, which hash encodes
	version mesh.SecurityVersion // the security version read before the legs, when keep
	keep    bool                 // the store gates DecisionTypes: a decision may be kept at version
	leg     atomic.Int32         // index in legStages of the leg being read
	known   bool                 // the index read was skipped: the memo named the instance
}

var legStages = [...]string{StageInstanceKey, StageInstance, StageGrant}

func (r *authentication) unreadable(err error) rx.Observable[Result] {
	return rx.Return(r.a.unavailable(legStages[r.leg.Load()], r.hash, err))
}

// leg is the outcome of one bounded point read: the node's content decoded
// (or why it could not be), or absent.
type leg[T any] struct {
	v       T
	present bool
	err     error // the content could not be decoded
}

// readLeg reads path, bounded by the read budget under the name stage, and
// yields exactly one outcome, present (decoded) or absent, or fails with
// the read's error. The outcome is sent only once the read has ended, so
// its bound is disarmed before the next leg starts: Take is inside the
// bound, so the read's end reaches Timeout, which disarms before it passes
// the completion on, and only then does Reduce send the outcome (absent,
// its seed, when no node came). The node is decoded as it arrives, so what
// a leg keeps is the decoded content, not the node.
//
// Three operators per leg: the legs run on every authenticated request, and
// what they allocate is what the collector works through at load.
//
// A node whose type is not nodeType (compared as stores gate types,
// mesh.EqualNames) is absent to the leg: the legs decide only from nodes
// of DecisionTypes, every write of which moves the security version a kept
// decision is checked against. (A node of an ungated type written at a
// path where none was moves no version; read as the leg's node it would
// make the legs decide otherwise than the kept decision.)
func readLeg[T any](a *Authenticator, stage, path, nodeType string, decode func(*authMemo, mesh.Node) leg[T]) rx.Observable[leg[T]] {
	read := rx.TimeoutStage(rx.Take(a.Mesh.Get(path), 1), stage, a.readBudget(), a.clock())
	return rx.Reduce(read, leg[T]{}, func(_ leg[T], n mesh.Node) leg[T] {
		if !mesh.EqualNames(n.NodeType, nodeType) {
			return leg[T]{}
		}
		return decode(&a.memo, n)
	})
}

func keyIndexLeg(_ *authMemo, n mesh.Node) leg[keyIndexContent] {
	idx, err := decodeKeyIndex(n)
	return leg[keyIndexContent]{v: idx, present: true, err: err}
}

// instanceLeg decodes an instance node, or takes what the same content
// decoded to last; the Result gets a copy of its own.
func instanceLeg(m *authMemo, n mesh.Node) leg[*Instance] {
	if v, ok := m.decodedAs(n); ok {
		inst := *v.(*Instance)
		return leg[*Instance]{v: &inst, present: true}
	}
	inst, err := decodeInstance(n)
	if err == nil {
		kept := *inst
		m.keepDecoded(n, &kept)
	}
	return leg[*Instance]{v: inst, present: true, err: err}
}

// grantRead is a grant node's content: the grant (its InstanceID not yet
// set) and the entries left out.
type grantRead struct {
	g   PluginGrant
	bad []error
}

// grantLeg decodes a grant node, or takes what the same content decoded
// to last.
func grantLeg(m *authMemo, n mesh.Node) leg[grantRead] {
	if v, ok := m.decodedAs(n); ok {
		return leg[grantRead]{v: v.(grantRead), present: true}
	}
	g, bad, err := decodeGrant(n, "")
	if err == nil {
		m.keepDecoded(n, grantRead{g: g, bad: bad})
	}
	return leg[grantRead]{v: grantRead{g: g, bad: bad}, present: true, err: err}
}

func (r *authentication) afterKeyIndex(l leg[keyIndexContent]) rx.Observable[Result] {
	a, hash := r.a, r.hash
	switch {
	case !l.present:
		return rx.Return(a.refused(RefusedUnknownKey, hash))
	case l.err != nil:
		return rx.Return(a.unavailable(StageInstanceKey, hash, l.err))
	case !HashesEqual(l.v.KeyHash, hash):
		// Another key whose hash shares the 12-character index id.
		return rx.Return(a.refused(RefusedUnknownKey, hash))
	}
	r.leg.Store(1)
	return rx.SelectMany(readLeg(a, StageInstance, InstancePath(l.v.Instance), InstanceNodeType, instanceLeg), r.afterInstance)
}

func (r *authentication) afterInstance(l leg[*Instance]) rx.Observable[Result] {
	a, hash, inst := r.a, r.hash, l.v
	if r.known && (!l.present || (l.err == nil && !inst.HasKeyHash(hash))) {
		// The instance the memo named no longer lists the key (or is
		// gone): what the key is now is the index node's to say, as for
		// a key never seen.
		a.memo.forgetInstance(hash)
		r.known = false
		r.leg.Store(0)
		return r.fromKeyIndex()
	}
	switch {
	case !l.present:
		return rx.Return(a.refused(RefusedUnknownInstance, hash))
	case l.err != nil:
		return rx.Return(a.unavailable(StageInstance, hash, l.err))
	case !inst.HasKeyHash(hash):
		// The index node outlived a revocation; the instance is the truth.
		return rx.Return(a.refused(RefusedRevokedKey, hash))
	case inst.Disabled:
		return rx.Return(a.refused(RefusedDisabled, hash))
	}
	if !r.known {
		a.memo.keepInstance(hash, inst.ID)
	}
	r.leg.Store(2)
	return rx.SelectMany(readLeg(a, StageGrant, GrantPath(inst.ID), GrantNodeType, grantLeg), func(l leg[grantRead]) rx.Observable[Result] {
		return r.afterGrant(inst, l)
	})
}

func (r *authentication) afterGrant(inst *Instance, l leg[grantRead]) rx.Observable[Result] {
	a, hash := r.a, r.hash
	res := Result{Instance: inst, Grant: PluginGrant{InstanceID: inst.ID}}
	if l.present {
		if l.err != nil {
			return rx.Return(a.unavailable(StageGrant, hash, l.err))
		}
		for _, e := range l.v.bad {
			a.logger().Warn("auth: grant entry left out", "instance", inst.ID, "error", e)
		}
		res.Grant = l.v.g
		res.Grant.InstanceID = inst.ID
	}
	if r.keep && len(l.v.bad) == 0 {
		a.decisions.keep(&r.digest, r.version, inst, res.Grant)
	}
	return a.withRanks(res, &r.digest)
}

func (a *Authenticator) refused(reason, hash string) Result {
	a.logger().Debug("auth: instance key refused", "reason", reason, "keyHashPrefix", HashPrefix(hash))
	return Result{Refused: reason}
}

// unavailable names the leg and why it could not be read. The Result says
// why in words fit for the caller (see publicReason); the error itself,
// which may name the database, its host and its user, is logged.
func (a *Authenticator) unavailable(stage, hash string, err error) Result {
	reason := strings.TrimPrefix(err.Error(), stage+": ")
	res := Result{Unavailable: stage + ": " + publicReason(err)}
	a.logger().Warn("auth: could not find out whether the instance key is valid; answering unavailable, not unauthenticated",
		"stage", stage, "reason", reason, "keyHashPrefix", HashPrefix(hash), "unavailable", mesh.IsUnavailable(err))
	return res
}

// publicReason is why a leg could not be read, in fixed words: the read's
// own bound when it ran out, else the kind of failure, never err's text.
func publicReason(err error) string {
	var timeout *rx.TimeoutError
	switch {
	case errors.As(err, &timeout):
		return fmt.Sprintf("no answer within %s", timeout.After)
	case mesh.IsUnavailable(err):
		return "the store is unavailable"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "the read was cut short"
	}
	return "the read failed (the server's log says why)"
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
