package mesh

import "fmt"

// ChangeKind says what a Change frame carries.
type ChangeKind uint8

const (
	// Initial is the first frame of every query: the full result.
	Initial ChangeKind = iota
	// Added, Updated and Removed carry the nodes that entered, changed in,
	// or left the result since the previous frame.
	Added
	Updated
	Removed
	// Reset replaces the whole result after the live feed had a gap (a
	// listener reconnected): the reader must not patch, but start over.
	Reset
)

func (k ChangeKind) String() string {
	switch k {
	case Initial:
		return "initial"
	case Added:
		return "added"
	case Updated:
		return "updated"
	case Removed:
		return "removed"
	case Reset:
		return "reset"
	}
	return fmt.Sprintf("ChangeKind(%d)", uint8(k))
}

// Change is one frame of a live query.
type Change struct {
	Kind ChangeKind
	// Items is the full result in the query's order for Initial and Reset,
	// and the affected nodes otherwise.
	Items []Node
	// Partitions lists the partition schemas the frame was read from; nil
	// means unknown (never "all").
	Partitions []string
	// SilentProviders names providers that completed without sending their
	// Initial. The result is then a floor, not the truth, and must not be
	// cached as an answer.
	SilentProviders []string
}

// WriteOp is the kind of write a ChangeNotice announces.
type WriteOp uint8

const (
	WriteInsert WriteOp = iota
	WriteUpdate
	WriteDelete
)

func (o WriteOp) String() string {
	switch o {
	case WriteInsert:
		return "INSERT"
	case WriteUpdate:
		return "UPDATE"
	case WriteDelete:
		return "DELETE"
	}
	return fmt.Sprintf("WriteOp(%d)", uint8(o))
}

// ParseWriteOp reads the names String returns (as PostgreSQL's TG_OP spells them).
func ParseWriteOp(s string) (WriteOp, bool) {
	switch s {
	case "INSERT":
		return WriteInsert, true
	case "UPDATE":
		return WriteUpdate, true
	case "DELETE":
		return WriteDelete, true
	}
	return 0, false
}

// ChangeNotice announces one write. NodeType is what lets a live query skip
// a write it cannot be affected by; "" means unknown, and then every live
// query must re-read (fail-safe). A notice with an empty Path stands for the
// notices a subscriber did not receive: it fell too far behind (a store
// sends one rather than hold them or make writers wait), or the store's
// own feed had a gap (pgstore's listener reconnected). Anything may have
// changed.
type ChangeNotice struct {
	Path     string
	Op       WriteOp
	NodeType string
}
