package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// StageAccessFold names the wait for the security nodes behind an access
// decision.
const StageAccessFold = "access fold"

// GlobalAdminScope is the scope at which the Admin role makes a user a global
// administrator.
const GlobalAdminScope = "Admin"

// The node types of the access fold and the content each carries:
//
//	Role                   anywhere; the id is the node's id
//	                       {"permissions": 7 | ["Read", "Update"], "isInheritable": true}
//	GroupMembership        anywhere (by convention under the group)
//	                       {"member": "alice", "groups": ["team-7", "staff"]}
//	AccessAssignment       at {scope}/_Access/{id}; _Access/{id} is the root scope ""
//	                       {"subject": "alice", "roles": [{"role": "Editor", "denied": false}]}
//	PartitionAccessPolicy  at {scope}/_Policy
//	                       {"read": null, "create": false, "update": false, "delete": false,
//	                        "comment": null, "execute": null, "thread": null, "api": null,
//	                        "publicRead": true, "breaksInheritance": false}
//	a gated type           anywhere; content is not read: the node itself becomes
//	                       readable by everyone (access.Gate)
//
// How a node that cannot be read is treated depends on what leaving it out
// would do. A role or a gate only grants, so it is left out (narrower, never
// wider) and logged. An assignment or policy may carry a deny or a cap, so
// its scope becomes unreadable: every question at or below it is
// Undetermined. A membership may lead to a group whose deny is decisive
// anywhere, so the whole fold is unusable and every question is
// Undetermined.
const (
	RoleNodeType       = "Role"
	MembershipNodeType = "GroupMembership"
	AssignmentNodeType = "AccessAssignment"
	PolicyNodeType     = "PartitionAccessPolicy"

	accessContainer = "_Access"
	policyID        = "_Policy"
)

// SecurityTypes returns the node types of the access fold. They are
// mesh.SecurityTypes, which every store gates and every router refuses to
// narrow whatever its options say, so a store opened with zero options
// serves the fold safely. A FoldSource refuses to decide (Undetermined, with
// an *UndeclaredSecurityTypesError logged) over a reader whose snapshot
// does not declare them all.
func SecurityTypes() []string {
	return []string{RoleNodeType, MembershipNodeType, AssignmentNodeType, PolicyNodeType}
}

// UndeclaredSecurityTypesError reports a security reader whose snapshot does
// not declare every type the fold reads (SecuritySnapshot.GatedTypes): the
// nodes of a missing type may exist and simply not be in the snapshot, and
// a missing deny or cap fails open, so no decision is made over it. Every
// decision is Undetermined until the reader declares them.
type UndeclaredSecurityTypesError struct {
	Missing []string // the types the fold reads that the snapshot does not declare
}

func (e *UndeclaredSecurityTypesError) Error() string {
	return fmt.Sprintf("auth: the security reader does not declare the node types %s as gated; "+
		"an access fold over it could miss a deny, so every decision is undetermined (a store must gate mesh.SecurityTypes and FoldSource.GatedTypes)",
		strings.Join(e.Missing, ", "))
}

// FoldSource serves the access fold from a store's security materialisation
// (mesh.SecurityReader): the complete set of security nodes, maintained by
// the write path, never a paged or narrowed query. The fold is rebuilt only
// when the snapshot's Version changes; the cache is the value's own, so use
// one FoldSource per store and share it. Each read is bounded by Budget on
// Clock, and the Reader must honour the context it is given, which is
// cancelled when the budget is spent. A Reader (or Logger) that panics
// fails that read with a *PanicError: the decision is Undetermined and the
// next one reads again.
//
// A Reader that is also a mesh.SecurityVersioner (memstore, pgstore) makes
// a warm decision cheap: with a fold built, a decision reads only the
// version (no read at all in memory, one row in PostgreSQL) on the caller's
// goroutine, and reads the nodes only when the version moved.
//
// A FoldSource must not be copied after first use.
type FoldSource struct {
	Reader mesh.SecurityReader
	// Clock bounds reads; nil means the real clock.
	Clock clock.Clock
	// Budget bounds one read of the security nodes (and the rebuild it may
	// need); zero means mesh.DefaultBudgets().Permission.
	Budget time.Duration
	// GatedTypes are node types whose nodes open themselves for Read to
	// everyone (access.Gate). The store must gate the same types, so that it
	// returns them among the security nodes.
	GatedTypes []string
	// Logger receives a warning per undetermined decision and per security
	// node left out; nil means slog.Default().
	Logger *slog.Logger

	mu    sync.Mutex
	reads uint64     // reads started, numbering them
	cur   *foldBuild // the newest build, finished or in flight
}

// foldBuild is the fold of one snapshot version.
type foldBuild struct {
	seq     uint64 // the read it came from
	version mesh.SecurityVersion
	done    chan struct{} // closed once fold and err are set
	fold    *access.Fold
	err     error
}

// Fold returns the access fold of the current security nodes: the cached one
// when the snapshot version has not changed. It fails when the nodes could
// not be read within the budget, or cannot make a usable fold.
func (s *FoldSource) Fold(ctx context.Context) (*access.Fold, error) {
	switch {
	case s == nil:
		return nil, fmt.Errorf("auth: reading the access fold: %w", &ConfigError{Setting: "FoldSource", Problem: "is nil (use one FoldSource per store, set up with its Reader)"})
	case ctx == nil:
		return nil, fmt.Errorf("auth: reading the access fold: %w", &ConfigError{Setting: "ctx", Problem: "is nil (pass the request's context, or context.Background())"})
	}
	if s.Reader == nil {
		// Read on the fold's own goroutine, a nil Reader would end the
		// process.
		return nil, fmt.Errorf("auth: reading the access fold: %w", &ConfigError{Setting: "FoldSource.Reader", Problem: "is nil (set it to the store's security reader)"})
	}
	if f, answered, err := s.warm(ctx); answered {
		return f, err
	}
	// The read runs off the caller's goroutine so that the bound holds even
	// against a reader that is slow to notice its context ending.
	load := rx.Create(func(ctx context.Context, o rx.Observer[*access.Fold]) {
		go func() {
			f, err := s.load(ctx)
			if err != nil {
				o.OnError(err)
				return
			}
			o.OnNext(f)
			o.OnCompleted()
		}()
	})
	f, err := rx.First(ctx, rx.TimeoutStage(load, StageAccessFold, s.budget(), s.clock()))
	if err != nil {
		return nil, fmt.Errorf("auth: reading the access fold: %w", err)
	}
	return f, nil
}

// Decide answers whether user holds every permission in need at path.
// A fold that could not be read is Undetermined, which denies. A user named
// after the Admin partition (GlobalAdminScope, in any ASCII case) holds
// nothing in it: the fold would make them Admin of it as their own. A path
// with a "." or ".." segment names no node (mesh.ValidatePath) and holds
// nothing: a grant at its literal prefix would otherwise answer for the
// scope a caller that cleans the path reads.
func (s *FoldSource) Decide(ctx context.Context, user, path string, need access.Permission) access.Decision {
	if mesh.EqualNames(user, GlobalAdminScope) && mesh.EqualNames(mesh.Partition(strings.TrimLeft(path, "/")), GlobalAdminScope) {
		return access.Denied
	}
	if hasDotSegment(path) {
		return access.Denied
	}
	f, err := s.Fold(ctx)
	if err != nil {
		s.logger().Warn("auth: access undetermined: the fold could not be read", "user", user, "path", path, "error", err)
		return access.Undetermined
	}
	return f.Decide(user, path, need)
}

// IsGlobalAdmin answers whether user holds, at GlobalAdminScope, every
// permission of the Admin role: an Admin grant at Admin (or inherited from
// the root) and no deny there; it answers as Decide(ctx, user,
// GlobalAdminScope, the Admin role's permissions). A user named after the
// Admin partition (in any ASCII case; nothing trimmed, no Unicode folding:
// mesh.EqualNames) is refused. A fold that could not be read is
// Undetermined.
func (s *FoldSource) IsGlobalAdmin(ctx context.Context, user string) access.Decision {
	if mesh.EqualNames(user, GlobalAdminScope) {
		// The fold makes every user Admin of their own partition; a user
		// whose id is the admin partition's name must not become global
		// admin by that rule. The name rule, as Decide's own check: one
		// answer for one user.
		return access.Denied
	}
	admin, _ := access.BuiltInRole(access.RoleAdmin)
	return s.Decide(ctx, user, GlobalAdminScope, admin.Permissions)
}

// warm answers from the newest finished fold when the Reader can tell its
// version and the version has not moved: one version read, no snapshot
// read, no goroutine. The read runs on the caller's goroutine under a
// context the budget's timer cancels, so the bound holds for a versioner
// that honours its context, as SecurityVersioner requires. answered is
// false when the cold path must run: no versioner, no finished fold yet, or
// a moved version.
func (s *FoldSource) warm(ctx context.Context) (f *access.Fold, answered bool, err error) {
	versioner, ok := s.Reader.(mesh.SecurityVersioner)
	if !ok {
		return nil, false, nil
	}
	s.mu.Lock()
	b := s.cur
	s.mu.Unlock()
	if b == nil {
		return nil, false, nil
	}
	select {
	case <-b.done:
	default:
		return nil, false, nil // a build in flight: the cold path shares it
	}
	version, err := s.readVersion(ctx, versioner)
	if err != nil {
		// A cached fold is never served when the current version cannot
		// be read: it may be the fold of a revoked grant.
		return nil, true, fmt.Errorf("auth: reading the access fold: %w", err)
	}
	if version != b.version {
		return nil, false, nil
	}
	if b.err != nil {
		return nil, true, fmt.Errorf("auth: reading the access fold: %w", b.err)
	}
	return b.fold, true, nil
}

// readVersion reads the security version within the budget on the clock.
func (s *FoldSource) readVersion(ctx context.Context, v mesh.SecurityVersioner) (_ mesh.SecurityVersion, err error) {
	// The versioner is the caller's code: a panic out of it is this read's
	// error, as it is on the cold path's goroutine, and never serves the
	// kept fold.
	defer func() {
		if p := recovered("reading the security version", recover()); p != nil {
			err = p
		}
	}()
	budget := s.budget()
	expired := &rx.TimeoutError{Stage: StageAccessFold, After: budget}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	expire := func() { cancel(expired) }
	// A clock that runs its own timers (rxtest's) runs this one too, as
	// the rx operators' timers do.
	if sched, ok := s.clock().(rx.Scheduler); ok {
		defer sched.Schedule(budget, expire)()
	} else {
		defer s.clock().AfterFunc(budget, expire).Stop()
	}
	version, err := v.SecurityVersion(ctx)
	if context.Cause(ctx) == error(expired) {
		return mesh.SecurityVersion{}, expired
	}
	if err != nil {
		return mesh.SecurityVersion{}, fmt.Errorf("reading the security version: %w", err)
	}
	return version, nil
}

// load reads the security nodes and returns their fold, building it only for
// a version not seen before. Concurrent loads of one version share a build.
func (s *FoldSource) load(ctx context.Context) (*access.Fold, error) {
	s.mu.Lock()
	s.reads++
	seq := s.reads
	s.mu.Unlock()

	// The Reader is the caller's code on the fold's own goroutine: its
	// panic is this read's error, not the end of the process.
	var snap mesh.SecuritySnapshot
	var err error
	if p := guard("reading the security nodes", func() { snap, err = s.Reader.SecurityNodes(ctx) }); p != nil {
		return nil, p
	}
	if err != nil {
		return nil, fmt.Errorf("reading the security nodes: %w", err)
	}

	s.mu.Lock()
	b := s.cur
	if b != nil && b.version == snap.Version {
		s.mu.Unlock()
		select {
		case <-b.done:
			return b.fold, b.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	nb := &foldBuild{seq: seq, version: snap.Version, done: make(chan struct{})}
	if b == nil || b.seq < seq {
		// Only a read that started after the cached one may replace it, so a
		// slow read of an older version never evicts a newer fold.
		s.cur = nb
	}
	s.mu.Unlock()

	// build logs through the caller's Logger. A panic there fails this
	// build and those sharing it, and is no fact about the version: the
	// build is dropped, so the next read builds it again.
	if p := guard("building the access fold", func() { nb.fold, nb.err = s.build(snap) }); p != nil {
		nb.fold, nb.err = nil, p
		s.mu.Lock()
		if s.cur == nb {
			s.cur = b
		}
		s.mu.Unlock()
	}
	close(nb.done)
	return nb.fold, nb.err
}

// build makes the fold of one snapshot. Its error is a fact about that
// version's nodes, so it is kept with the version like a fold would be.
func (s *FoldSource) build(snap mesh.SecuritySnapshot) (*access.Fold, error) {
	var missing []string
	for _, t := range append(SecurityTypes(), s.GatedTypes...) {
		if !snap.Declares(t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return nil, &UndeclaredSecurityTypesError{Missing: missing}
	}
	as, skipped, err := BuildAccessSnapshot(snap.Nodes, s.GatedTypes)
	for _, e := range skipped {
		s.logger().Warn("auth: security node left out of the access fold", "version", snap.Version.Seq, "error", e)
	}
	if err != nil {
		return nil, err
	}
	for _, scope := range as.Unreadable {
		s.logger().Warn("auth: access undetermined below a scope: a security node there cannot be read", "version", snap.Version.Seq, "scope", scope)
	}
	return access.NewFold(as)
}

func (s *FoldSource) budget() time.Duration {
	if s.Budget <= 0 {
		return mesh.DefaultBudgets().Permission
	}
	return s.Budget
}

func (s *FoldSource) clock() clock.Clock {
	if s.Clock == nil {
		return clock.New()
	}
	return s.Clock
}

func (s *FoldSource) logger() *slog.Logger {
	if s == nil {
		return slog.Default()
	}
	return orDefault(s.Logger)
}

// hasDotSegment reports whether path has a "." or ".." segment.
func hasDotSegment(path string) bool {
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// SecurityNodeError reports a security node whose content or place the fold
// cannot use.
type SecurityNodeError struct {
	Path     string
	NodeType string
	Problem  string
}

func (e *SecurityNodeError) Error() string {
	return fmt.Sprintf("auth: %s node %s: %s", e.NodeType, e.Path, e.Problem)
}

// BuildAccessSnapshot maps security nodes to the rows of the access fold (see
// [RoleNodeType] for the content each type carries). Nodes of other types
// are ignored. Roles that cannot be used are left out and reported in
// skipped; assignments and policies that cannot be read make their scope
// unreadable (access.Snapshot.Unreadable) and are reported in skipped too; a
// membership that cannot be read is an error, since no fold is usable
// without it. err joins one *SecurityNodeError per such membership.
func BuildAccessSnapshot(nodes []mesh.Node, gatedTypes []string) (snap access.Snapshot, skipped []error, err error) {
	var broken []error
	unreadable := map[string]bool{}
	markUnreadable := func(scope string, e error) {
		skipped = append(skipped, e)
		if !unreadable[scope] {
			unreadable[scope] = true
			snap.Unreadable = append(snap.Unreadable, scope)
		}
	}
	roles := map[string][]access.Role{}
	var roleOrder []string

	for _, n := range nodes {
		bad := func(problem string) error {
			return &SecurityNodeError{Path: n.Path, NodeType: n.NodeType, Problem: problem}
		}
		switch {
		case mesh.EqualNames(n.NodeType, RoleNodeType):
			r, problem := roleOf(n)
			if problem != "" {
				skipped = append(skipped, bad(problem))
				continue
			}
			if _, seen := roles[r.ID]; !seen {
				roleOrder = append(roleOrder, r.ID)
			}
			roles[r.ID] = append(roles[r.ID], r)

		case mesh.EqualNames(n.NodeType, MembershipNodeType):
			var m access.GroupMembership
			switch {
			case !decodeObject(n.Content, &m):
				broken = append(broken, bad(`content is not {"member": ..., "groups": [...]}`))
			case strings.TrimSpace(m.Member) == "":
				broken = append(broken, bad("blank member"))
			case slicesContainBlank(m.Groups):
				broken = append(broken, bad("a blank group"))
			default:
				snap.Memberships = append(snap.Memberships, m)
			}

		case mesh.EqualNames(n.NodeType, AssignmentNodeType):
			ns, _ := mesh.SplitPath(n.Path)
			scope, inContainer := assignmentScope(ns)
			var a struct {
				Subject string             `json:"subject"`
				Roles   []access.RoleGrant `json:"roles"`
			}
			switch {
			case !inContainer:
				// Below a satellite container (acme/_Access/team/x) mesh
				// still files it under the owner, whose deny it may be.
				markUnreadable(mesh.OwnerOf(ns), bad("not in an "+accessContainer+" container"))
			case !decodeObject(n.Content, &a):
				markUnreadable(scope, bad(`content is not {"subject": ..., "roles": [{"role": ..., "denied": ...}]}`))
			case strings.TrimSpace(a.Subject) == "":
				markUnreadable(scope, bad("blank subject"))
			case blankRole(a.Roles):
				markUnreadable(scope, bad("a blank role"))
			default:
				snap.Assignments = append(snap.Assignments, access.Assignment{Scope: scope, Subject: a.Subject, Roles: a.Roles})
			}

		case mesh.EqualNames(n.NodeType, PolicyNodeType):
			scope, id := mesh.SplitPath(n.Path)
			var p access.Policy
			switch {
			case id != policyID:
				markUnreadable(scope, bad("a policy must be the node "+policyID+" of its scope"))
			case !decodeObject(n.Content, &p):
				markUnreadable(scope, bad("content is not an object of policy flags"))
			default:
				p.Scope = scope
				snap.Policies = append(snap.Policies, p)
			}

		case isGated(n.NodeType, gatedTypes):
			snap.Gates = append(snap.Gates, access.Gate{Path: n.Path})
		}
	}

	for _, id := range roleOrder {
		defs := roles[id]
		if len(defs) > 1 {
			// Which definition is meant cannot be told; with none, the role
			// grants nothing.
			skipped = append(skipped, &SecurityNodeError{NodeType: RoleNodeType, Path: id, Problem: fmt.Sprintf("defined by %d nodes", len(defs))})
			continue
		}
		snap.Roles = append(snap.Roles, defs[0])
	}
	if len(broken) > 0 {
		return access.Snapshot{}, skipped, errors.Join(broken...)
	}
	return snap, skipped, nil
}

// roleOf reads a Role node, or says why it cannot be used.
func roleOf(n mesh.Node) (access.Role, string) {
	var c struct {
		Permissions json.RawMessage `json:"permissions"`
		Inheritable bool            `json:"isInheritable"`
	}
	if !decodeObject(n.Content, &c) {
		return access.Role{}, `content is not {"permissions": ..., "isInheritable": ...}`
	}
	perms, ok := parsePermissions(c.Permissions)
	if !ok {
		return access.Role{}, "permissions must be a number or a list of permission names"
	}
	r := access.Role{ID: n.ID, Permissions: perms, Inheritable: c.Inheritable}
	if builtIn, ok := access.BuiltInRole(r.ID); ok && builtIn.Permissions != r.Permissions {
		return access.Role{}, fmt.Sprintf("redefines the built-in role %q", r.ID)
	}
	return r, ""
}

// knownPermissions is every flag a role may carry.
const knownPermissions = access.All | access.Sync | access.Compile

// parsePermissions reads a permission set given as its number or as a list
// of flag names ("Read", "All", ...; in any ASCII case, mesh.EqualNames: "ſync"
// is no flag, and a role naming it is left out).
func parsePermissions(raw json.RawMessage) (access.Permission, bool) {
	var n uint32
	if json.Unmarshal(raw, &n) == nil {
		p := access.Permission(n)
		return p, p&^knownPermissions == 0
	}
	var names []string
	if json.Unmarshal(raw, &names) != nil {
		return 0, false
	}
	var p access.Permission
	for _, name := range names {
		flag, ok := permissionNamed(strings.TrimSpace(name))
		if !ok {
			return 0, false
		}
		p |= flag
	}
	return p, true
}

func permissionNamed(name string) (access.Permission, bool) {
	for flag := access.Permission(1); flag&knownPermissions != 0; flag <<= 1 {
		if mesh.EqualNames(flag.String(), name) {
			return flag, true
		}
	}
	switch {
	case mesh.EqualNames(name, access.All.String()):
		return access.All, true
	case mesh.EqualNames(name, access.None.String()):
		return access.None, true
	}
	return 0, false
}

// assignmentScope returns the scope an assignment in namespace ns applies
// to: the path its _Access container hangs under. The container is
// recognised as mesh routes it (mesh.TableFor), whatever its case: a store
// keeps acme/_access/x as an assignment of acme, and its deny must count.
func assignmentScope(ns string) (string, bool) {
	i := strings.LastIndexByte(ns, '/')
	if mesh.TableFor(ns[i+1:]) != mesh.TableFor(accessContainer) {
		return "", false
	}
	return ns[:max(i, 0)], true
}

// decodeObject decodes a JSON object into v, reporting whether it could.
func decodeObject(raw json.RawMessage, v any) bool {
	trimmed := strings.TrimSpace(string(raw))
	return strings.HasPrefix(trimmed, "{") && json.Unmarshal(raw, v) == nil
}

func slicesContainBlank(xs []string) bool {
	for _, x := range xs {
		if strings.TrimSpace(x) == "" {
			return true
		}
	}
	return false
}

func blankRole(rs []access.RoleGrant) bool {
	for _, r := range rs {
		if strings.TrimSpace(r.Role) == "" {
			return true
		}
	}
	return false
}

func isGated(nodeType string, gated []string) bool {
	for _, t := range gated {
		if mesh.EqualNames(t, nodeType) {
			return true
		}
	}
	return false
}

// WriteUndetermined answers 503 with Retry-After for a request whose access
// could not be decided because the fold could not be read: like
// WriteUnavailable, it is not a statement about the caller's rights.
func WriteUndetermined(w http.ResponseWriter, reason string) {
	WriteUnavailable(w, StageAccessFold+": "+reason, 0)
}
