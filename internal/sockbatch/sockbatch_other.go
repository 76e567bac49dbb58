//go:build !linux

package sockbatch

import (
	"errors"
	"fmt"
)

// Ring is unavailable here: New always fails.
type Ring struct{}

// New fails with an error wrapping errors.ErrUnsupported: io_uring is Linux
// only. Entries not 1 to MaxEntries is an *OptionsError first, as on Linux.
func New(entries int, opts Options) (*Ring, error) {
	if entries < 1 || entries > MaxEntries {
		return nil, badEntries(entries)
	}
	return nil, fmt.Errorf("sockbatch: io_uring is Linux only: %w", errors.ErrUnsupported)
}

// Send fails: there is no ring here.
func (r *Ring) Send(sends []Op) error {
	for i := range sends {
		sends[i].N, sends[i].Err = 0, ErrNotSent
	}
	return ErrClosed
}

// Recv fails: there is no ring here.
func (r *Ring) Recv(ops []Op) error { return r.Send(ops) }

// Close does nothing.
func (r *Ring) Close() error { return nil }

// Kept is always 0: there is no ring here.
func (r *Ring) Kept() int { return 0 }
