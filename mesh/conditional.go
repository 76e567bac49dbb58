package mesh

import "fmt"

// VersionConflictError refuses a conditional write (Store.PutIfVersion):
// the node at Path was not at the version the writer expected, because
// someone else wrote or deleted it since it was read. Nothing was written;
// read the node again, reapply the change and retry. Actual is 0 when the
// node is absent.
type VersionConflictError struct {
	Path     string
	Expected int64 // the version the writer read; 0 for "absent"
	Actual   int64 // the version found; 0 for absent
}

func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("mesh: conditional write of %s: expected %s, found %s; nothing was written",
		e.Path, describeVersion(e.Expected), describeVersion(e.Actual))
}

func describeVersion(v int64) string {
	if v == 0 {
		return "no node"
	}
	return fmt.Sprintf("version %d", v)
}
