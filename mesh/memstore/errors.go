package memstore

import (
	"errors"
	"fmt"
)

// ErrClosed is wrapped by the errors of a store that has been closed. Reads
// on a closed store fail with a *mesh.UnavailableError around it: the store
// cannot say what is there, which is never the same as "absent".
var ErrClosed = errors.New("memstore: store is closed")

// UnroutablePathError reports a write to a path no partition schema can
// hold: its first segment starts with _ but is not a registered global
// satellite.
type UnroutablePathError struct {
	Path    string // the path written
	Segment string // its first segment
}

func (e *UnroutablePathError) Error() string {
	return fmt.Sprintf("memstore: cannot store %q: first segment %q starts with _ but is not a registered global satellite, "+
		"so no partition schema holds it; use a partition as the first segment, or register %s in the router's GlobalSatellites",
		e.Path, e.Segment, e.Segment)
}
