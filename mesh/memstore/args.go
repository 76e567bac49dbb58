package memstore

import (
	"context"

	"github.com/meshrx/meshrx/mesh"
)

// usable returns the *mesh.ArgumentError for a method fn called on a Store
// not made by New (nil or zero), or given a nil ctx where it takes one
// (takesCtx).
func (s *Store) usable(fn string, ctx context.Context, takesCtx bool) error {
	if s == nil || s.querier == nil {
		return &mesh.ArgumentError{Func: "memstore.(*Store)." + fn, Arg: "receiver", Reason: "must be made by memstore.New"}
	}
	if takesCtx && ctx == nil {
		return &mesh.ArgumentError{Func: "memstore.(*Store)." + fn, Arg: "ctx", Reason: "must not be nil"}
	}
	return nil
}
