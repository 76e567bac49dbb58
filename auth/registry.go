package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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

// Registry writes the instance registry on a mesh: instances, their keys,
// their grants and the plan-tier ladder (see [KeyIndexNamespace] for the
// nodes). Every read it makes is bounded by ReadBudget on Clock, every write
// by the caller's context.
//
// The mesh has no conditional write, so a Registry serialises its own
// read-modify-write operations; two Registry values writing the same
// instance at the same moment can lose a key hash. Use one Registry per mesh.
// A Registry must not be copied after first use.
type Registry struct {
	Mesh mesh.Service
	// Clock stamps grants and bounds reads; nil means the real clock.
	Clock clock.Clock
	// ReadBudget bounds each read; zero means DefaultReadBudget.
	ReadBudget time.Duration

	lockOnce sync.Once
	lock     chan struct{} // capacity 1: held while an operation runs
}

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
func (r *Registry) Register(ctx context.Context, id, name, plan string) (*Instance, error) {
	if err := ValidateInstanceID(id); err != nil {
		return nil, err
	}
	if err := r.checkPlan(ctx, plan); err != nil {
		return nil, err
	}
	unlock, err := r.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, ok, err := r.read(ctx, "instance", InstancePath(id)); err != nil {
		return nil, err
	} else if ok {
		return nil, &InstanceExistsError{ID: id}
	}
	inst := &Instance{ID: id, Name: strings.TrimSpace(name), Plan: canonicalPlan(plan)}
	if err := r.putInstance(ctx, inst); err != nil {
		return nil, err
	}
	return inst, nil
}

// Instance reads the registered instance id.
func (r *Registry) Instance(ctx context.Context, id string) (*Instance, error) {
	if err := ValidateInstanceID(id); err != nil {
		return nil, err
	}
	return r.instance(ctx, id)
}

// IssueKey mints a new key for instance id and returns it. The raw key is
// returned this once and never stored: the instance node gets its hash and an
// index node leads from the hash to the instance. Existing keys stay valid.
func (r *Registry) IssueKey(ctx context.Context, id string) (string, error) {
	if err := ValidateInstanceID(id); err != nil {
		return "", err
	}
	unlock, err := r.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	inst, err := r.instance(ctx, id)
	if err != nil {
		return "", err
	}
	key, _, err := r.issue(ctx, inst)
	return key, err
}

// RotateKey issues a new key for instance id and revokes every other key it
// holds, returning the new key.
func (r *Registry) RotateKey(ctx context.Context, id string) (string, error) {
	if err := ValidateInstanceID(id); err != nil {
		return "", err
	}
	unlock, err := r.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	inst, err := r.instance(ctx, id)
	if err != nil {
		return "", err
	}
	old := slices.Clone(inst.KeyHashes)
	key, hash, err := r.issue(ctx, inst)
	if err != nil {
		return "", err
	}
	inst.KeyHashes = []string{hash}
	if err := r.putInstance(ctx, inst); err != nil {
		return "", fmt.Errorf("auth: rotating the keys of %q: the new key works but the old ones were not revoked: %w", id, err)
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
// hash (as listed in Instance.KeyHashes). The instance stops listing the
// hash first, which refuses the key at once; then the index node goes.
func (r *Registry) RevokeKey(ctx context.Context, id, key string) error {
	if err := ValidateInstanceID(id); err != nil {
		return err
	}
	hash := strings.ToLower(strings.TrimSpace(key))
	if IsWellFormedKey(key) {
		hash = HashKey(key)
	}
	unlock, err := r.acquire(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	inst, err := r.instance(ctx, id)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(inst.KeyHashes, func(h string) bool { return HashesEqual(h, hash) })
	if i < 0 {
		return &UnknownKeyError{ID: id, HashPrefix: HashPrefix(hash)}
	}
	inst.KeyHashes = slices.Delete(inst.KeyHashes, i, i+1)
	if err := r.putInstance(ctx, inst); err != nil {
		return err
	}
	return r.dropIndex(ctx, id, hash)
}

// Disable refuses every key of instance id until Enable; keys and grant are
// kept.
func (r *Registry) Disable(ctx context.Context, id string) error { return r.setDisabled(ctx, id, true) }

// Enable lifts Disable.
func (r *Registry) Enable(ctx context.Context, id string) error { return r.setDisabled(ctx, id, false) }

func (r *Registry) setDisabled(ctx context.Context, id string, disabled bool) error {
	if err := ValidateInstanceID(id); err != nil {
		return err
	}
	unlock, err := r.acquire(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	inst, err := r.instance(ctx, id)
	if err != nil {
		return err
	}
	if inst.Disabled == disabled {
		return nil
	}
	inst.Disabled = disabled
	return r.putInstance(ctx, inst)
}

// SetGrant replaces the grant of instance id with entries in their text form
// (see [ParseGrantEntry]), recording who granted it. No entries means an
// empty grant: the instance may pull nothing. If any entry does not parse,
// nothing is written and every bad entry is reported.
func (r *Registry) SetGrant(ctx context.Context, id, grantedBy string, entries ...string) (PluginGrant, error) {
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
	unlock, err := r.acquire(ctx)
	if err != nil {
		return PluginGrant{}, err
	}
	defer unlock()
	if _, err := r.instance(ctx, id); err != nil {
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

// SetPlanTier writes one rung of the plan ladder, under its canonical id.
func (r *Registry) SetPlanTier(ctx context.Context, t PlanTier) error {
	id := canonicalPlan(t.ID)
	if err := ValidateInstanceID(id); err != nil {
		problem := err.Error()
		if idErr := (*InstanceIDError)(nil); errors.As(err, &idErr) {
			problem = idErr.Problem
		}
		return &PlanTierError{ID: t.ID, Field: "id", Problem: problem}
	}
	content, err := encodeContent(tierContent{Rank: t.Rank, AllAccess: t.AllAccess})
	if err != nil {
		return err
	}
	return r.put(ctx, mesh.Node{Path: TierPath(id), NodeType: TierNodeType, Name: id, Content: content})
}

// issue mints a key whose index id is free, lists its hash on inst, and
// writes the index node. On failure it takes the hash back off the instance.
func (r *Registry) issue(ctx context.Context, inst *Instance) (key, hash string, err error) {
	for attempt := 0; ; attempt++ {
		if attempt == maxKeyAttempts {
			return "", "", fmt.Errorf("auth: issuing a key for %q: %d fresh keys in a row had an index id already taken", inst.ID, maxKeyAttempts)
		}
		if key, err = NewKey(); err != nil {
			return "", "", err
		}
		hash = HashKey(key)
		_, taken, err := r.read(ctx, "instance key", KeyIndexPath(hash))
		if err != nil {
			return "", "", err
		}
		if !taken {
			break
		}
	}
	inst.KeyHashes = append(inst.KeyHashes, hash)
	if err := r.putInstance(ctx, inst); err != nil {
		return "", "", err
	}
	content, err := encodeContent(keyIndexContent{KeyHash: hash, Instance: inst.ID})
	if err == nil {
		err = r.put(ctx, mesh.Node{Path: KeyIndexPath(hash), NodeType: KeyIndexNodeType, Content: content})
	}
	if err != nil {
		inst.KeyHashes = inst.KeyHashes[:len(inst.KeyHashes)-1]
		if undo := r.putInstance(ctx, inst); undo != nil {
			return "", "", errors.Join(err, fmt.Errorf("auth: and taking the unusable key hash back off %q failed (revoke hash %s…): %w", inst.ID, HashPrefix(hash), undo))
		}
		return "", "", err
	}
	return key, hash, nil
}

// dropIndex deletes the index node of hash if it still leads to id with that
// very hash (another key may share the 12-character id after a revocation).
func (r *Registry) dropIndex(ctx context.Context, id, hash string) error {
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

func (r *Registry) instance(ctx context.Context, id string) (*Instance, error) {
	n, ok, err := r.read(ctx, "instance", InstancePath(id))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &UnknownInstanceError{ID: id}
	}
	return decodeInstance(n)
}

func (r *Registry) putInstance(ctx context.Context, inst *Instance) error {
	content, err := encodeInstance(inst)
	if err != nil {
		return err
	}
	return r.put(ctx, mesh.Node{Path: InstancePath(inst.ID), NodeType: InstanceNodeType, Name: inst.Name, Content: content})
}

func (r *Registry) put(ctx context.Context, n mesh.Node) error {
	if _, err := r.Mesh.Put(ctx, n); err != nil {
		return fmt.Errorf("auth: registry: writing %s: %w", n.Path, err)
	}
	return nil
}

// read is one bounded point read: the node and true, false when absent.
func (r *Registry) read(ctx context.Context, stage, path string) (mesh.Node, bool, error) {
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

// acquire takes the registry's write lock, waiting no longer than ctx allows.
func (r *Registry) acquire(ctx context.Context) (unlock func(), err error) {
	r.lockOnce.Do(func() { r.lock = make(chan struct{}, 1) })
	select {
	case r.lock <- struct{}{}:
		return func() { <-r.lock }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("auth: registry: waiting for the write lock held by another operation: %w", ctx.Err())
	}
}

func (r *Registry) clock() clock.Clock {
	if r.Clock == nil {
		return clock.New()
	}
	return r.Clock
}
