package mesh

import (
	"context"
	"slices"
)

// The security types: the node types an access fold reads (auth's roles,
// group memberships, assignments and partition policies). Every store keeps
// them in its security materialisation and every Router refuses to narrow a
// read of them, whatever their configuration says: a store opened with zero
// options serves an access fold safely. A short read of them is a vanished
// grant or a deny that fails open, so being gated is not opt-in.
const (
	RoleType                  = "Role"
	GroupMembershipType       = "GroupMembership"
	AccessAssignmentType      = "AccessAssignment"
	PartitionAccessPolicyType = "PartitionAccessPolicy"
)

// SecurityTypes returns the node types every store gates and every router
// never narrows, whatever GatedTypes it was given.
func SecurityTypes() []string {
	return []string{RoleType, GroupMembershipType, AccessAssignmentType, PartitionAccessPolicyType}
}

// WithSecurityTypes returns SecurityTypes followed by the types of extra
// that are not among them (compared with the name rule, EqualNames): the
// types a store given extra as its GatedTypes gates.
func WithSecurityTypes(extra []string) []string {
	out := SecurityTypes()
	for _, t := range extra {
		if !slices.ContainsFunc(out, func(have string) bool { return EqualNames(have, t) }) {
			out = append(out, t)
		}
	}
	return out
}

// SecurityVersion names one state of a store's security materialisation:
// Seq, a counter every write of a gated type moves, and Token, drawn at
// random by that same write (in PostgreSQL, in its transaction). Two reads
// that return equal versions saw the same set, so a reader may keep what it
// built from one until the version differs. A counter alone is not enough:
// a database restored from a backup, a lagging standby or another replica
// reading an older state brings the counter back, and the next write gives
// it again with other contents; its Token is another then. Compare versions
// with ==; the zero value is no store's version.
type SecurityVersion struct {
	Seq   int64
	Token [16]byte
}

// IsZero reports whether v is the zero version, which no store returns.
func (v SecurityVersion) IsZero() bool { return v == SecurityVersion{} }

// SecuritySnapshot is every node of the security types, from every
// partition: the input of the access fold. Version changes whenever a write
// changes the set, so a reader can keep what it built from it until then.
type SecuritySnapshot struct {
	Version SecurityVersion
	Nodes   []Node
	// GatedTypes are the node types this snapshot holds every node of:
	// SecurityTypes and the store's configured GatedTypes. A fold must not
	// decide over a snapshot that does not declare the types it reads (a
	// type that is not gated is simply absent, and an absent deny fails
	// open); auth's FoldSource refuses to. Shared: it must not be modified.
	GatedTypes []string
}

// Declares reports whether the snapshot declares nodeType as gated.
func (s SecuritySnapshot) Declares(nodeType string) bool {
	return slices.ContainsFunc(s.GatedTypes, func(t string) bool { return EqualNames(t, nodeType) })
}

// SecurityReader is implemented by stores that maintain the security
// materialisation: the nodes whose type is one of SecurityTypes or one the
// store was configured to gate, kept up to date by the write path
// itself rather than read by a query. The access fold must never be paged or
// narrowed — a short read is a vanished grant or a deny that fails open — so
// it reads this complete set, not a fan-out.
type SecurityReader interface {
	SecurityNodes(ctx context.Context) (SecuritySnapshot, error)
}

// SecurityVersioner is implemented by a SecurityReader that can tell the
// Version its SecurityNodes would return now without reading the nodes
// (kept by the same writes that change the set, see SecurityVersion): one
// row in PostgreSQL, a field in memory. A reader that keeps a fold reads it
// on every decision and the nodes only when it moved. It must honour ctx,
// returning when ctx ends.
type SecurityVersioner interface {
	SecurityVersion(ctx context.Context) (SecurityVersion, error)
}
