package memstore

import (
	"errors"
	"fmt"
)

// ErrClosed is wrapped by the errors of a store that has been closed. Reads
// on a closed store fail with a *mesh.UnavailableError around it: the store
// cannot say what is there, which is never the same as "absent".
var ErrClosed = errors.New("memstore: store is closed")

// SettleError is Settle's error when its context ends before every
// subscriber has caught up.
type SettleError struct {
	Behind int   // subscribers still behind when the wait ended
	Err    error // the context's cause
}

func (e *SettleError) Error() string {
	return fmt.Sprintf("memstore: waiting for subscribers to catch up: %d still behind: %v", e.Behind, e.Err)
}

func (e *SettleError) Unwrap() error { return e.Err }
