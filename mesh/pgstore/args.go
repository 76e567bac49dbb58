package pgstore

import (
	"context"

	"github.com/meshrx/meshrx/mesh"
)

// usable returns the *mesh.ArgumentError for a method fn called on a Store
// not made by Open (nil or zero), or given a nil ctx where it takes one
// (takesCtx).
func (s *Store) usable(fn string, ctx context.Context, takesCtx bool) error {
	if s == nil || s.querier == nil {
		return &mesh.ArgumentError{Func: "pgstore.(*Store)." + fn, Arg: "receiver", Reason: "must be made by pgstore.Open"}
	}
	if takesCtx && ctx == nil {
		return nilArg("(*Store)."+fn, "ctx")
	}
	return nil
}

// nilArg is the *mesh.ArgumentError for a nil argument arg of this
// package's function fn.
func nilArg(fn, arg string) error {
	return &mesh.ArgumentError{Func: "pgstore." + fn, Arg: arg, Reason: "must not be nil"}
}

// ctxDB returns the *mesh.ArgumentError for a nil ctx or db given to fn.
func ctxDB(fn string, ctx context.Context, db DB) error {
	switch {
	case ctx == nil:
		return nilArg(fn, "ctx")
	case db == nil:
		return nilArg(fn, "db")
	}
	return nil
}
