package mesh

import "context"

// SecuritySnapshot is every node of the security types, from every
// partition: the input of the access fold. Version changes whenever a write
// changes the set, so a reader can keep what it built from it until then.
type SecuritySnapshot struct {
	Version int64
	Nodes   []Node
}

// SecurityReader is implemented by stores that maintain the security
// materialisation: the nodes whose type is one the store was configured to
// gate (the security types its user declares, such as auth.SecurityTypes;
// mesh names none), kept up to date by the write path
// itself rather than read by a query. The access fold must never be paged or
// narrowed — a short read is a vanished grant or a deny that fails open — so
// it reads this complete set, not a fan-out.
type SecurityReader interface {
	SecurityNodes(ctx context.Context) (SecuritySnapshot, error)
}

// SecurityVersioner is implemented by a SecurityReader that can tell the
// Version its SecurityNodes would return now without reading the nodes (a
// counter kept by the same writes that change the set): one row in
// PostgreSQL, a field in memory. A reader that keeps a fold reads it on
// every decision and the nodes only when it moved. It must honour ctx,
// returning when ctx ends.
type SecurityVersioner interface {
	SecurityVersion(ctx context.Context) (int64, error)
}
