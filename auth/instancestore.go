package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// DefaultReadBudget bounds one registry read when no budget is given.
const DefaultReadBudget = 10 * time.Second

// maxKeyAttempts bounds how often IssueKey mints a new key when the index id
// of the last one (48 bits of its hash) was already taken.
const maxKeyAttempts = 4

// Instances holds the instance registry on a mesh: instances, their keys,
// their grants and the plan-tier ladder (see [KeyIndexNamespace] for the
// nodes). Every read it makes is bounded by ReadBudget on Clock, every write
// by the caller's context.
//
// Every change to an instance node is a compare-and-set on its version
// (mesh.Store.PutIfVersion), decided by the store: an Instances that meets
// another writer's change (another Instances, another process, a replica on
// the same database) reads the node again and reapplies its own, so no key
// hash is lost, and a key index id is claimed by creating its node, so two
// writers never share one.
type Instances struct {
	Mesh mesh.Store
	// Clock stamps grants and bounds reads; nil means the real clock.
	Clock clock.Clock
	// ReadBudget bounds each read; zero means DefaultReadBudget.
	ReadBudget time.Duration
}

// maxUpdateAttempts bounds how often one change to an instance node is
// reapplied after other writers' changes landed first. Each conflict is
// another writer's success, so only a storm of writers to one instance
// uses them all up.
const maxUpdateAttempts = 32

// ContendedError reports a change to an instance that lost the
// compare-and-set to other writers MaxAttempts times in a row; nothing of it
// was written. Try again later.
type ContendedError struct {
	ID          string
	MaxAttempts int
	Last        error // the last *mesh.VersionConflictError
}

func (e *ContendedError) Error() string {
	return fmt.Sprintf("auth: instance %q changed under %d attempts in a row to update it; nothing was written", e.ID, e.MaxAttempts)
}

func (e *ContendedError) Unwrap() error { return e.Last }

// InstanceExistsError reports a Register of an id that is already taken.
type InstanceExistsError struct{ ID string }

func (e *InstanceExistsError) Error() string {
	return fmt.Sprintf("auth: instance %q is already registered", e.ID)
}

// UnknownInstanceError reports an operation on an instance that is not
// registered.
type UnknownInstanceError struct{ ID string }

func (e *UnknownInstanceError) Error() string {
	return fmt.Sprintf("auth: no instance %q is registered", e.ID)
}

// UnknownKeyError reports a revocation of a key the instance does not hold.
type UnknownKeyError struct {
	ID         string
	HashPrefix string // the first characters of the key's hash, never the key
}

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("auth: instance %q holds no key whose hash starts %s", e.ID, e.HashPrefix)
}

// Register records a new instance with no keys and no grant. plan is stored
// in canonical form; blank means the baseline plan. A plan the ladder does
// not have is refused with an *UnknownPlanError naming the known ones.
func (r *Instances) Register(ctx context.Context, id, name, plan string) (*Instance, error) {
	if err := ValidateInstanceID(id); err != nil {
		return nil, err
	}
	if err := r.checkPlan(ctx, plan); err != nil {
		return nil, err
	}
	inst := &Instance{ID: id, Name: strings.TrimSpace(name), Plan: canonicalPlan(plan)}
	// Created only where no node is: of concurrent registrations of one id,
	// exactly one lands.
	err := r.putInstance(ctx, inst, 0)
	if conflict := (*mesh.VersionConflictError)(nil); errors.As(err, &conflict) {
		return nil, &InstanceExistsError{ID: id}
	}
	if err != nil {
		return nil, err
	}
	return inst, nil
}

// Instance reads the registered instance id.
func (r *Instances) Instance(ctx context.Context, id string) (*Instance, error) {
	if err := ValidateInstanceID(id); err != nil {
		return nil, err
	}
	inst, _, err := r.instance(ctx, id)
	return inst, err
}

// IssueKey mints a new key for instance id and returns it. The raw key is
// returned this once and never stored: the instance node gets its hash and an
// index node leads from the hash to the instance. Existing keys stay valid.
//
// When the store cannot say whether the instance update landed
// (mesh.ErrOutcomeUnknown), the instance is read again: if it lists the new
// hash, the key is returned; if not, the error wraps mesh.ErrOutcomeUnknown,
// since the update may still land (listing a hash whose key nobody holds:
// harmless for IssueKey; RotateKey would then have revoked the other keys,
// so read the instance and rotate again).
func (r *Instances) IssueKey(ctx context.Context, id string) (string, error) {
	if err := ValidateInstanceID(id); err != nil {
		return "", err
	}
	key, _, _, err := r.issue(ctx, id, false)
	return key, err
}

// RotateKey issues a new key for instance id and revokes every other key it
// holds, returning the new key.
func (r *Instances) RotateKey(ctx context.Context, id string) (string, error) {
	if err := ValidateInstanceID(id); err != nil {
		return "", err
	}
	key, _, old, err := r.issue(ctx, id, true)
	if err != nil {
		return "", err
	}
	for _, h := range old {
		if err := r.dropIndex(ctx, id, h); err != nil {
			// The old keys are already refused: the instance no longer lists
			// them. A leftover index node only costs a read.
			return key, fmt.Errorf("auth: rotating the keys of %q: old keys are revoked, but an index node was left: %w", id, err)
		}
	}
	return key, nil
}

// RevokeKey revokes one key of instance id. key may be the raw key or its
// hash (as listed in Instance.KeyHashes), with surrounding space ignored.
// The instance stops listing the hash first, which refuses the key at once;
// then the index node goes.
func (r *Instances) RevokeKey(ctx context.Context, id, key string) error {
	if err := ValidateInstanceID(id); err != nil {
		return err
	}
	// Trimmed first: a key pasted from a file keeps its newline. Anything
	// that is not a hash is a key, or was meant to be one: only its hash is
	// compared or shown.
	key = strings.TrimSpace(key)
	hash := mesh.FoldName(key)
	if !isKeyHash(hash) {
		hash = HashKey(key)
	}
	_, err := r.update(ctx, id, func(inst *Instance) error {
		i := slices.IndexFunc(inst.KeyHashes, func(h string) bool { return HashesEqual(h, hash) })
		if i < 0 {
			return &UnknownKeyError{ID: id, HashPrefix: HashPrefix(hash)}
		}
		inst.KeyHashes = slices.Delete(inst.KeyHashes, i, i+1)
		return nil
	})
	if err != nil {
		return err
	}
	return r.dropIndex(ctx, id, hash)
}

// isKeyHash reports whether h has the form of HashKey's result: 64
// lower-case hex digits.
func isKeyHash(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Disable refuses every key of instance id until Enable; keys and grant are
// kept.
func (r *Instances) Disable(ctx context.Context, id string) error {
	return r.setDisabled(ctx, id, true)
}

// Enable lifts Disable.
func (r *Instances) Enable(ctx context.Context, id string) error {
	return r.setDisabled(ctx, id, false)
}

func (r *Instances) setDisabled(ctx context.Context, id string, disabled bool) error {
	if err := ValidateInstanceID(id); err != nil {
		return err
	}
	_, err := r.update(ctx, id, func(inst *Instance) error {
		inst.Disabled = disabled
		return nil
	})
	return err
}

// SetGrant replaces the grant of instance id with entries in their text form
// (see [ParseGrantEntry]), recording who granted it. No entries means an
// empty grant: the instance may pull nothing. If any entry does not parse,
// nothing is written and every bad entry is reported.
func (r *Instances) SetGrant(ctx context.Context, id, grantedBy string, entries ...string) (PluginGrant, error) {
	if err := ValidateInstanceID(id); err != nil {
		return PluginGrant{}, err
	}
	g := PluginGrant{InstanceID: id, GrantedBy: strings.TrimSpace(grantedBy), Entries: make([]GrantEntry, 0, len(entries))}
	var errs []error
	for _, text := range entries {
		e, err := ParseGrantEntry(text)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		g.Entries = append(g.Entries, e)
	}
	if len(errs) > 0 {
		return PluginGrant{}, errors.Join(errs...)
	}
	if _, _, err := r.instance(ctx, id); err != nil {
		return PluginGrant{}, err
	}
	g.UpdatedAt = r.clock().Now().UTC()
	c := grantContent{Entries: make([]string, len(g.Entries)), GrantedBy: g.GrantedBy, UpdatedAt: g.UpdatedAt}
	for i, e := range g.Entries {
		c.Entries[i] = e.String()
	}
	content, err := encodeContent(c)
	if err != nil {
		return PluginGrant{}, err
	}
	if err := r.put(ctx, mesh.Node{Path: GrantPath(id), NodeType: GrantNodeType, Name: id, Content: content}); err != nil {
		return PluginGrant{}, err
	}
	return g, nil
}

// SetPlanTier writes one rung of the plan ladder, under its canonical id
// (trimmed, lower case). An id that is not, once canonical, a valid
// instance id ([ValidateInstanceID]) is refused with a *PlanTierError; every
// reader of the ladder ([ParsePlanTier]) refuses the same ids.
func (r *Instances) SetPlanTier(ctx context.Context, t PlanTier) error {
	id, err := planTierID(t.ID)
	if err != nil {
		return err
	}
	content, err := encodeContent(tierContent{Rank: t.Rank, AllAccess: t.AllAccess})
	if err != nil {
		return err
	}
	return r.put(ctx, mesh.Node{Path: TierPath(id), NodeType: TierNodeType, Name: id, Content: content})
}

// issue mints a key, claims its index id by creating the index node (only
// where none is, so two writers never share an id), and lists its hash on
// instance id by compare-and-set: alone (revoking the others, returned in
// replaced) when rotate, beside the others otherwise. If the instance
// cannot be updated, the index node is taken back; if the update's outcome
// is unknown (mesh.ErrOutcomeUnknown), it stays, and the instance read
// again decides: listing the hash, the key is issued; otherwise the error
// still wraps mesh.ErrOutcomeUnknown.
func (r *Instances) issue(ctx context.Context, id string, rotate bool) (key, hash string, replaced []string, err error) {
	// The instance must exist before an index node may lead to it.
	if _, _, err := r.instance(ctx, id); err != nil {
		return "", "", nil, err
	}
	for attempt := 0; ; attempt++ {
		if attempt == maxKeyAttempts {
			return "", "", nil, fmt.Errorf("auth: issuing a key for %q: %d fresh keys in a row had an index id already taken", id, maxKeyAttempts)
		}
		if key, err = NewKey(); err != nil {
			return "", "", nil, err
		}
		hash = HashKey(key)
		content, err := encodeContent(keyIndexContent{KeyHash: hash, Instance: id})
		if err != nil {
			return "", "", nil, err
		}
		_, err = r.Mesh.PutIfVersion(ctx, mesh.Node{Path: KeyIndexPath(hash), NodeType: KeyIndexNodeType, Content: content}, 0)
		if conflict := (*mesh.VersionConflictError)(nil); errors.As(err, &conflict) {
			continue // the index id is taken
		}
		if err != nil {
			return "", "", nil, fmt.Errorf("auth: registry: writing %s: %w", KeyIndexPath(hash), err)
		}
		break
	}
	before, err := r.update(ctx, id, func(inst *Instance) error {
		if rotate {
			inst.KeyHashes = []string{hash}
		} else {
			inst.KeyHashes = append(inst.KeyHashes, hash)
		}
		return nil
	})
	if errors.Is(err, mesh.ErrOutcomeUnknown) {
		// The update may have landed, and may yet: neither a failure (the
		// index node would be dropped under a listed hash, and a rotation
		// would have revoked every other key with no key handed out) nor a
		// success. The index node stays (one that leads to an instance not
		// listing its hash only costs a read) and the instance is read again:
		// if it lists the hash, the key was issued.
		// On the caller's context: a caller that gave up gets the unknown
		// outcome at once, not after the read's budget.
		if ctx.Err() != nil {
			return "", "", nil, errors.Join(fmt.Errorf("auth: issuing a key for %q: the instance may come to list a key never handed out: %w", id, err), ctx.Err())
		}
		if listed, rerr := r.lists(ctx, id, hash); rerr != nil || !listed {
			return "", "", nil, errors.Join(fmt.Errorf("auth: issuing a key for %q: the instance may come to list a key never handed out: %w", id, err), rerr)
		}
	} else if err != nil {
		if undo := r.dropIndex(ctx, id, hash); undo != nil {
			return "", "", nil, errors.Join(err, fmt.Errorf("auth: and deleting the unused index node of %q failed: %w", id, undo))
		}
		return "", "", nil, err
	}
	if rotate {
		replaced = slices.DeleteFunc(slices.Clone(before.KeyHashes), func(h string) bool { return HashesEqual(h, hash) })
	}
	return key, hash, replaced, nil
}

// update applies change to instance id as a compare-and-set on its node's
// version, reading it again and reapplying change after each conflict (at
// most maxUpdateAttempts times), and returns the instance as it was before
// the change that landed — or may have landed: with an error wrapping
// mesh.ErrOutcomeUnknown, before is the instance the last write started
// from. An error from change is returned as it is, with nothing written; a
// change that alters nothing writes nothing.
func (r *Instances) update(ctx context.Context, id string, change func(*Instance) error) (before *Instance, err error) {
	var last error
	for range maxUpdateAttempts {
		inst, version, err := r.instance(ctx, id)
		if err != nil {
			return nil, err
		}
		before = &Instance{ID: inst.ID, Name: inst.Name, Plan: inst.Plan, Disabled: inst.Disabled, KeyHashes: slices.Clone(inst.KeyHashes)}
		if err := change(inst); err != nil {
			return nil, err
		}
		err = r.putInstance(ctx, inst, version)
		if conflict := (*mesh.VersionConflictError)(nil); errors.As(err, &conflict) {
			last = err
			continue
		}
		if errors.Is(err, mesh.ErrOutcomeUnknown) {
			return before, err
		}
		if err != nil {
			return nil, err
		}
		return before, nil
	}
	return nil, &ContendedError{ID: id, MaxAttempts: maxUpdateAttempts, Last: last}
}

// lists reads instance id and reports whether it lists hash.
func (r *Instances) lists(ctx context.Context, id, hash string) (bool, error) {
	inst, _, err := r.instance(ctx, id)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(inst.KeyHashes, func(h string) bool { return HashesEqual(h, hash) }), nil
}

// dropIndex deletes the index node of hash if it still leads to id with that
// very hash (another key may share the 12-character id after a revocation).
func (r *Instances) dropIndex(ctx context.Context, id, hash string) error {
	n, ok, err := r.read(ctx, "instance key", KeyIndexPath(hash))
	if err != nil || !ok {
		return err
	}
	c, err := decodeKeyIndex(n)
	if err == nil && (c.Instance != id || !HashesEqual(c.KeyHash, hash)) {
		return nil
	}
	if err := r.Mesh.Delete(ctx, n.Path); err != nil {
		return fmt.Errorf("auth: registry: deleting %s: %w", n.Path, err)
	}
	return nil
}

// instance reads instance id and the version of its node.
func (r *Instances) instance(ctx context.Context, id string) (*Instance, int64, error) {
	n, ok, err := r.read(ctx, "instance", InstancePath(id))
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, &UnknownInstanceError{ID: id}
	}
	inst, err := decodeInstance(n)
	return inst, n.Version, err
}

// putInstance writes inst's node if it is still at version expected (0:
// absent); otherwise it fails with the *mesh.VersionConflictError.
func (r *Instances) putInstance(ctx context.Context, inst *Instance, expected int64) error {
	if err := r.usable(); err != nil {
		return err
	}
	content, err := encodeInstance(inst)
	if err != nil {
		return err
	}
	n := mesh.Node{Path: InstancePath(inst.ID), NodeType: InstanceNodeType, Name: inst.Name, Content: content}
	if _, err := r.Mesh.PutIfVersion(ctx, n, expected); err != nil {
		return fmt.Errorf("auth: registry: writing %s: %w", n.Path, err)
	}
	return nil
}

func (r *Instances) put(ctx context.Context, n mesh.Node) error {
	if err := r.usable(); err != nil {
		return err
	}
	if _, err := r.Mesh.Put(ctx, n); err != nil {
		return fmt.Errorf("auth: registry: writing %s: %w", n.Path, err)
	}
	return nil
}

// read is one bounded point read: the node and true, false when absent.
func (r *Instances) read(ctx context.Context, stage, path string) (mesh.Node, bool, error) {
	if err := r.usable(); err != nil {
		return mesh.Node{}, false, err
	}
	budget := r.ReadBudget
	if budget <= 0 {
		budget = DefaultReadBudget
	}
	n, err := rx.First(ctx, rx.TimeoutStage(r.Mesh.Get(path), stage, budget, r.clock()))
	switch {
	case errors.Is(err, rx.ErrEmpty):
		return mesh.Node{}, false, nil
	case err != nil:
		return mesh.Node{}, false, fmt.Errorf("auth: registry: reading %s: %w", path, err)
	}
	return n, true, nil
}

// usable refuses an Instances without its store: every method reads or
// writes through read, put or putInstance first, so none reaches a nil
// Mesh.
func (r *Instances) usable() error {
	if r == nil {
		return &ConfigError{Setting: "Instances", Problem: "is nil (set up an Instances with its Mesh)"}
	}
	if r.Mesh == nil {
		return &ConfigError{Setting: "Instances.Mesh", Problem: "is nil (set it to the store holding the instances)"}
	}
	return nil
}

func (r *Instances) clock() clock.Clock {
	if r.Clock == nil {
		return clock.New()
	}
	return r.Clock
}
