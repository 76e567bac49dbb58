package access

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Well-known user ids.
const (
	// Anonymous is the caller who has not signed in; a blank user id means
	// Anonymous. Assignments to Anonymous are all such a caller gets.
	Anonymous = "Anonymous"
	// Public stands for every signed-in user: what is granted to Public is
	// granted to each of them, on top of their own roles.
	Public = "Public"
)

// Snapshot is a complete read of the security legs. It must hold every
// custom role, membership, assignment and policy there is: see the package
// documentation for why a paged or narrowed read fails open.
type Snapshot struct {
	Roles       []Role // custom roles; the built-in roles are always known
	Memberships []GroupMembership
	Assignments []Assignment
	Policies    []Policy
	Gates       []Gate
	// Unreadable lists scopes where a security node was present but could
	// not be read (an assignment or policy whose content is broken). Leaving
	// it out could drop a deny, so every question at or below such a scope
	// is Undetermined; the rest of the mesh is answered as usual.
	Unreadable []string
}

// SnapshotError reports one entry of a Snapshot that the fold cannot use.
// NewFold reports every such entry, joined.
type SnapshotError struct {
	Kind    string // "role", "membership", "assignment", "policy" or "gate"
	Index   int    // position in its Snapshot slice
	Problem string
}

func (e *SnapshotError) Error() string {
	return fmt.Sprintf("access: %s %d: %s", e.Kind, e.Index, e.Problem)
}

// Fold answers access questions over one Snapshot. Its answers never change
// and it is safe for concurrent use; build a new one with NewFold when the
// security legs change. A Fold must not be copied.
type Fold struct {
	rolePerms map[string]Permission // role id → permissions, built-ins included
	groupsOf  map[string][]string   // member → the groups it is directly in
	// scopes maps a scope, its partition folded (foldPartition), to what
	// applies there: every spelling of a partition is one partition.
	scopes map[string]*scopeRules
	gates  map[string]bool // paths opened for Read to everyone
	// unreadable are the scopes of Snapshot.Unreadable, their partition
	// folded; "" is the root and covers every path.
	unreadable []string

	// subjects caches the transitive groups of each member of a membership
	// asked about: bounded by the snapshot, and dies with the Fold.
	subjects sync.Map // string → subjectSet
}

// scopeRules is everything the walk needs at one scope, whatever the ASCII
// case its partition is spelled in, found with a single lookup. What
// restricts (a deny, a cap, broken inheritance) applies to every spelling;
// what grants (a role, a public read) only to the one it was written at:
// narrower, never wider.
type scopeRules struct {
	grants    []scopedGrant
	hasPolicy bool
	cap       Permission
	breaks    bool
	publicAt  []string // the spellings whose policy grants public read
}

type scopedGrant struct {
	at      string // the scope as written
	subject string
	role    string
	denied  bool
}

// NewFold indexes s once so that every later question is a walk over the
// path's scopes. It returns an error, joining one *SnapshotError per unusable
// entry, for: a blank role id, a role with unknown permission bits, a custom
// role that redefines a built-in or repeats an id; a membership with a blank
// member or group; an assignment with a blank subject or role, or a scope
// naming the _Access container itself; two policies for one scope; a gate
// with a blank path.
func NewFold(s Snapshot) (*Fold, error) {
	var errs []error
	bad := func(kind string, i int, format string, args ...any) {
		errs = append(errs, &SnapshotError{Kind: kind, Index: i, Problem: fmt.Sprintf(format, args...)})
	}
	f := &Fold{
		rolePerms: make(map[string]Permission, len(s.Roles)+5),
		groupsOf:  make(map[string][]string, len(s.Memberships)),
		scopes:    make(map[string]*scopeRules),
	}
	for _, r := range BuiltInRoles() {
		f.rolePerms[r.ID] = r.Permissions
	}

	custom := make(map[string]bool, len(s.Roles))
	for i, r := range s.Roles {
		switch builtIn, isBuiltIn := BuiltInRole(r.ID); {
		case strings.TrimSpace(r.ID) == "":
			bad("role", i, "blank id")
		case r.Permissions&^defined != 0:
			bad("role", i, "%q has unknown permission bits %#x", r.ID, uint32(r.Permissions&^defined))
		case isBuiltIn && builtIn.Permissions != r.Permissions:
			bad("role", i, "%q is built in (%v) and cannot be redefined as %v", r.ID, builtIn.Permissions, r.Permissions)
		case isBuiltIn:
			// The same definition as the built-in: nothing to add.
		case custom[r.ID]:
			bad("role", i, "%q is defined twice", r.ID)
		default:
			custom[r.ID] = true
			f.rolePerms[r.ID] = r.Permissions
		}
	}

	for i, m := range s.Memberships {
		if strings.TrimSpace(m.Member) == "" {
			bad("membership", i, "blank member")
			continue
		}
		for _, g := range m.Groups {
			if strings.TrimSpace(g) == "" {
				bad("membership", i, "%q has a blank group", m.Member)
				continue
			}
			f.groupsOf[m.Member] = append(f.groupsOf[m.Member], g)
		}
	}

	for i, a := range s.Assignments {
		scope := normalizePath(a.Scope)
		switch {
		case strings.TrimSpace(a.Subject) == "":
			bad("assignment", i, "blank subject")
			continue
		case scope == "_Access" || strings.HasSuffix(scope, "/_Access"):
			bad("assignment", i, "scope %q names the _Access container; give the path it hangs under", a.Scope)
			continue
		}
		for _, rg := range a.Roles {
			if strings.TrimSpace(rg.Role) == "" {
				bad("assignment", i, "%q at %q has a blank role", a.Subject, scope)
				continue
			}
			rules := f.rulesAt(scope)
			rules.grants = append(rules.grants, scopedGrant{at: scope, subject: a.Subject, role: rg.Role, denied: rg.Denied})
		}
	}

	policyAt := make(map[string]bool, len(s.Policies))
	for i, p := range s.Policies {
		scope := normalizePath(p.Scope)
		if policyAt[scope] {
			bad("policy", i, "a second policy for scope %q", scope)
			continue
		}
		policyAt[scope] = true
		rules := f.rulesAt(scope)
		if !rules.hasPolicy {
			rules.hasPolicy, rules.cap = true, defined
		}
		// Another spelling of the partition may have a policy too: both
		// restrict.
		rules.cap &= p.Cap()
		rules.breaks = rules.breaks || p.BreaksInheritance
		if p.PublicRead {
			rules.publicAt = append(rules.publicAt, scope)
		}
	}

	for i, g := range s.Gates {
		p := normalizePath(g.Path)
		if strings.TrimSpace(p) == "" {
			bad("gate", i, "blank path")
			continue
		}
		if f.gates == nil {
			f.gates = make(map[string]bool, len(s.Gates))
		}
		f.gates[p] = true
	}

	for _, u := range s.Unreadable {
		f.unreadable = append(f.unreadable, foldPartition(normalizePath(u)))
	}

	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

func (f *Fold) rulesAt(scope string) *scopeRules {
	key := foldPartition(scope)
	r := f.scopes[key]
	if r == nil {
		r = &scopeRules{}
		f.scopes[key] = r
	}
	return r
}

// foldPartition is p with its first segment, the partition, folded with the
// name rule (ASCII case only), as the stores fold it into a schema; the
// rest keeps its case, as node paths do. It allocates only when the
// partition has an upper-case letter.
func foldPartition(p string) string {
	end := strings.IndexByte(p, '/')
	if end < 0 {
		end = len(p)
	}
	for i := 0; i < end; i++ {
		if 'A' <= p[i] && p[i] <= 'Z' {
			b := []byte(p)
			for j := i; j < end; j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return p
}

// normalizePath drops empty segments, so "/a//b/" is the scope "a/b". It
// allocates only when there is something to drop.
func normalizePath(p string) string {
	if !strings.HasPrefix(p, "/") && !strings.HasSuffix(p, "/") && !strings.Contains(p, "//") {
		return p
	}
	segs := strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
	return strings.Join(segs, "/")
}

// Effective returns the permissions user holds at path.
//
// The walk is the reference evaluator's, step for step. The subjects are the user
// and every group reachable from it through memberships. Then for each scope
// from the root "" down to path itself ("", "a", "a/b", ...):
//
//  1. a policy that breaks inheritance discards the roles and the cap
//     gathered so far;
//  2. roles granted there to any subject are added;
//  3. the policy's cap is applied, and PublicRead grants Read;
//  4. roles denied there to any subject are removed, whoever they came from,
//     so a deny beats a grant at the same scope; a grant at a deeper scope
//     adds the role again;
//  5. at the user's own partition (the first segment equal to the user id,
//     ignoring ASCII case; a global satellite, '_' first, is no partition)
//     the user gets Admin, after the denies of that scope.
//
// The result is the union of the roles' permissions, plus for a signed-in
// user the permissions Public holds by the same walk, limited by the cap,
// plus the PublicRead grant, plus Read at a gated path (see Gate), for
// everyone. Unknown role ids grant nothing. At or below an unreadable scope
// (Snapshot.Unreadable) nothing is granted. A partition is one whatever the
// ASCII case of its name: a deny, a cap, broken inheritance or an unreadable
// scope at any spelling of it holds for every spelling, while a grant or a
// public read holds only for the spelling it was written at; below the
// partition, scopes keep their case, as node paths do. A deny on a user
// or group does not take away what Public holds. A nil Fold grants nothing.
func (f *Fold) Effective(user, path string) Permission {
	if f == nil {
		return None
	}
	if user == "" {
		user = Anonymous
	}
	path = normalizePath(path)
	if f.unreadableAt(path) {
		return None
	}
	folded := foldPartition(path)
	signedIn := user != Anonymous && user != Public

	// Only a partition can be owned: one first segment, and not a global
	// satellite ('_' first), which names no partition.
	owner := signedIn && !strings.Contains(user, "/") && !strings.HasPrefix(user, "_")
	own := f.walk(user, path, folded, owner)
	perms := own.roles
	if signedIn {
		perms |= f.walk(Public, path, folded, false).roles
	}
	perms = perms&own.cap | own.publicGrant
	if f.gates[path] {
		perms |= Read
	}
	return perms
}

// unreadableAt reports whether path is at or below an unreadable scope, in
// any spelling of its partition.
func (f *Fold) unreadableAt(path string) bool {
	if len(f.unreadable) == 0 {
		return false
	}
	path = foldPartition(path)
	for _, u := range f.unreadable {
		if u == "" || path == u || strings.HasPrefix(path, u) && path[len(u)] == '/' {
			return true
		}
	}
	return false
}

type walkResult struct {
	roles       Permission // union of the permissions of the roles held
	cap         Permission
	publicGrant Permission
}

// walk is the walk of Effective for user down path; folded is path with its
// partition folded (foldPartition), which finds a scope's rules.
func (f *Fold) walk(user, path, folded string, ownPartition bool) walkResult {
	subjects := f.subjectsOf(user)
	var buf [16]string
	roles := buf[:0]
	capPerm, publicGrant := defined, None

	for end := 0; ; {
		scope := path[:end]
		if rules := f.scopes[folded[:end]]; rules != nil {
			if rules.breaks {
				roles = roles[:0]
				capPerm = defined
			}
			for _, g := range rules.grants {
				if !g.denied && g.at == scope && subjects.has(g.subject) && !contains(roles, g.role) {
					roles = append(roles, g.role)
				}
			}
			if rules.hasPolicy {
				capPerm &= rules.cap
				if contains(rules.publicAt, scope) {
					publicGrant |= Read
				}
			}
			for _, g := range rules.grants {
				if g.denied && subjects.has(g.subject) {
					roles = remove(roles, g.role)
				}
			}
		}
		if ownPartition && equalNames(scope, user) && !contains(roles, RoleAdmin) {
			roles = append(roles, RoleAdmin)
		}

		if end == len(path) {
			break
		}
		if end == 0 {
			end = nextSegmentEnd(path, 0)
		} else {
			end = nextSegmentEnd(path, end+1)
		}
	}

	var perms Permission
	for _, r := range roles {
		perms |= f.rolePerms[r]
	}
	return walkResult{roles: perms, cap: capPerm, publicGrant: publicGrant}
}

// nextSegmentEnd returns the index of the '/' ending the segment that starts
// at from, or len(path).
func nextSegmentEnd(path string, from int) int {
	if i := strings.IndexByte(path[from:], '/'); i >= 0 {
		return from + i
	}
	return len(path)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func remove(xs []string, x string) []string {
	out := xs[:0]
	for _, y := range xs {
		if y != x {
			out = append(out, y)
		}
	}
	return out
}

// equalNames compares a partition and a user name with the name rule:
// ASCII case folding only (mesh.EqualNames). Unicode folding would make the
// user "\u212Aate" (KELVIN SIGN) Admin of the partition kate.
func equalNames(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
