package sockbatch_test

import (
	"errors"
	"testing"

	"github.com/meshrx/meshrx/internal/sockbatch"
)

func TestNewRefusesEntriesOutOfRange(t *testing.T) {
	for _, n := range []int{-1, 0, sockbatch.MaxEntries + 1} {
		r, err := sockbatch.New(n, sockbatch.Options{})
		if err == nil || errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("New(%d) = %v, %v; want an error about entries", n, r, err)
		}
	}
}
