package memstore

import "errors"

// ErrClosed is wrapped by the errors of a store that has been closed. Reads
// on a closed store fail with a *mesh.UnavailableError around it: the store
// cannot say what is there, which is never the same as "absent".
var ErrClosed = errors.New("memstore: store is closed")
