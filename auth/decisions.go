package auth

import (
	"context"
	"sync"
	"time"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// StageSecurityVersion names the read of the store's security version
// behind a kept decision (see DecisionTypes).
const StageSecurityVersion = "security version"

// DecisionTypes returns the node types an authentication decision reads:
// the key index, the instance and its grant. A store that gates them
// (memstore.Options.GatedTypes, pgstore.Options.GatedTypes: every write to
// one of them then moves the store's security version, in the write
// itself) lets an Authenticator keep the decision for a key that
// authenticated and answer the key's next request from it, after one read
// of that version instead of the instance and grant reads: any write to a
// node of these types since the decision (a revoked key, a disabled
// instance, a changed plan or grant, on this replica or another sharing
// the database) moves the version, and the next request reads every leg
// again. The version is a counter and a token drawn by each write
// (mesh.SecurityVersion): a database restored from a backup or a lagging
// standby, written again, does not give a kept version back. The legs read
// only nodes of these types, so a node of another type at their paths,
// which moves no version, changes nothing they decide. A store that does
// not gate them all gets no kept decisions: every request reads its legs,
// as it would without this. Only AuthenticateNow, which has its caller's
// context for the version read, uses and keeps decisions.
//
// The plan-tier ladder is not among them: a kept decision never keeps the
// ranks, which are read from the Authenticator's Ladder on every request
// as before.
func DecisionTypes() []string {
	return []string{KeyIndexNodeType, InstanceNodeType, GrantNodeType}
}

// decisionCache keeps, per key that authenticated, what its legs decided
// (the instance and its grant) and the store's security version read
// before those legs. A request whose key has a kept decision reads the
// version now; when it is the one kept, no node of DecisionTypes has been
// written since before the legs ran, so the legs would decide the same,
// and the kept decision answers. Anything else (another version, a
// version that could not be read, no decision kept, a store that does not
// gate DecisionTypes) runs the legs, as without the cache.
//
// Keys are the SHA-256 of the presented key, never the key: the map
// compares those digests in variable time, which tells an attacker at most
// how much of a digest of their own choosing matched one kept (finding a
// key whose digest matches one kept is a preimage of SHA-256; the digest
// is what the mesh stores anyway). Only a key that authenticated, whose
// grant had no entries left out (a left-out entry is logged on every
// request), is kept: unknown, refused and unreadable keys cost what they
// did. It holds at most memoEntries decisions and memoBytes of their
// contents (a full cache drops an arbitrary decision for a new one), and
// it is a field of its Authenticator: no package state.
type decisionCache struct {
	mu      sync.Mutex
	covered int8 // 0: not known yet; 1: the store gates DecisionTypes; -1: it does not
	kept    map[[32]byte]keptDecision
	bytes   int // the contents' estimated bytes in kept
}

// keptDecision is what the legs decided for a key, and the security
// version read before them. inst is the decision's own copy (each Result
// gets a copy of it); grant's entries are shared and never modified, as
// they are between Results of the memo's decoded grants.
type keptDecision struct {
	version mesh.SecurityVersion
	inst    Instance
	grant   PluginGrant
	bytes   int
}

// securityVersion reads the store's security version when the store gates
// DecisionTypes: once, on ctx, the whole wait (with, the first time, the
// read of which types the store gates) bounded by budget on the
// Authenticator's clock under the name StageSecurityVersion. use is false
// when no decision may be kept or used: a store that does not gate them,
// or a version that could not be read (logged at Debug: the legs then run
// and say what they find).
func (a *Authenticator) securityVersion(ctx context.Context, budget time.Duration) (version mesh.SecurityVersion, use bool) {
	v, ok := a.Mesh.(mesh.SecurityVersioner)
	if !ok || a.decisions.uncovered() {
		return mesh.SecurityVersion{}, false
	}
	r := versionRead{expired: rx.TimeoutError{Stage: StageSecurityVersion, After: budget}}
	ctx, r.cancel = context.WithCancelCause(ctx)
	defer r.cancel(nil)
	// A clock that runs its own timers (rxtest's) runs this one too, as
	// the rx operators' timers do.
	if sched, ok := a.clock().(rx.Scheduler); ok {
		defer sched.Schedule(budget, r.expire)()
	} else {
		defer a.clock().AfterFunc(budget, r.expire).Stop()
	}
	if !a.decisions.coveredBy(ctx, a) {
		return mesh.SecurityVersion{}, false
	}
	version, err := v.SecurityVersion(ctx)
	if context.Cause(ctx) == error(&r.expired) {
		err = &r.expired
	}
	if err != nil {
		a.logger().Debug("auth: could not read the security version; reading every leg", "stage", StageSecurityVersion, "error", err)
		return mesh.SecurityVersion{}, false
	}
	return version, true
}

// uncovered reports whether the store is known not to gate DecisionTypes.
func (c *decisionCache) uncovered() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.covered < 0
}

// coveredBy reports whether a's store gates DecisionTypes, reading it on
// ctx the first time. A store's gated types are fixed when it is opened,
// so the answer, once read, is kept; a read that failed is tried again by
// the next request.
func (c *decisionCache) coveredBy(ctx context.Context, a *Authenticator) bool {
	c.mu.Lock()
	covered := c.covered
	c.mu.Unlock()
	if covered != 0 {
		return covered > 0
	}
	r, ok := a.Mesh.(mesh.SecurityReader)
	if !ok {
		c.setCovered(-1)
		return false
	}
	snap, err := r.SecurityNodes(ctx)
	if err != nil {
		a.logger().Debug("auth: could not read which node types the store gates; reading every leg", "error", err)
		return false
	}
	covered = 1
	for _, t := range DecisionTypes() {
		if !snap.Declares(t) {
			covered = -1
		}
	}
	c.setCovered(covered)
	return covered > 0
}

func (c *decisionCache) setCovered(v int8) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.covered = v
}

// versionRead is one bounded version read: its cancel and the error its
// timer cancels it with, in one allocation.
type versionRead struct {
	cancel  context.CancelCauseFunc
	expired rx.TimeoutError
}

func (r *versionRead) expire() { r.cancel(&r.expired) }

// has reports whether a decision is kept for digest, at any version.
func (c *decisionCache) has(digest *[32]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.kept[*digest]
	return ok
}

// decided returns the kept decision for digest when it was kept at
// version, as a Result of its own (ranks not set).
func (c *decisionCache) decided(digest *[32]byte, version mesh.SecurityVersion) (Result, bool) {
	c.mu.Lock()
	d, ok := c.kept[*digest]
	c.mu.Unlock()
	if !ok || d.version != version {
		return Result{}, false
	}
	inst := d.inst
	return Result{Instance: &inst, Grant: d.grant}, true
}

// keep keeps what the legs decided for digest, read after version.
func (c *decisionCache) keep(digest *[32]byte, version mesh.SecurityVersion, inst *Instance, grant PluginGrant) {
	d := keptDecision{version: version, inst: *inst, grant: grant, bytes: decisionBytes(inst, grant)}
	if d.bytes > memoNodeBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kept == nil {
		c.kept = map[[32]byte]keptDecision{}
	}
	if old, ok := c.kept[*digest]; ok {
		c.bytes -= old.bytes
		delete(c.kept, *digest)
	}
	for k, e := range c.kept { // arbitrary decisions, until d fits
		if len(c.kept) < memoEntries && c.bytes+d.bytes <= memoBytes {
			break
		}
		c.bytes -= e.bytes
		delete(c.kept, k)
	}
	c.kept[*digest] = d
	c.bytes += d.bytes
}

// decisionBytes estimates what a kept decision holds: its strings and
// slices, with a word of overhead per string.
func decisionBytes(inst *Instance, grant PluginGrant) int {
	const word = 16
	n := 256 + len(inst.ID) + len(inst.Name) + len(inst.Plan)
	for _, h := range inst.KeyHashes {
		n += word + len(h)
	}
	for _, e := range grant.Entries {
		n += 4*word + len(e.Source) + len(e.Package) + len(e.Plan)
	}
	return n + len(grant.InstanceID) + len(grant.GrantedBy)
}
