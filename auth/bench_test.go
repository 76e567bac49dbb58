package auth

import (
	"context"
	"testing"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/rx"
)

// resultSink keeps the Result of one subscription without allocating.
type resultSink struct {
	res  Result
	done bool
}

func (s *resultSink) OnNext(r Result) { s.res = r }
func (s *resultSink) OnError(error)   {}
func (s *resultSink) OnCompleted()    { s.done = true }

func BenchmarkFast401(b *testing.B) {
	store := newFaultStore(b, clock.New())
	a := &Authenticator{Mesh: store, Ladder: &PlanTierLadder{Mesh: store}}
	for _, c := range []struct{ name, header string }{
		{"missing", ""},
		{"malformed", "Bearer mwi_0123456789abcdefghijklmnopqrstuvwxyzABCDEF!"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var sink resultSink
			b.ReportAllocs()
			for b.Loop() {
				sink = resultSink{}
				a.Authenticate(c.header).Subscribe(&sink)
			}
			if !sink.done || sink.res.Authenticated() || sink.res.Unavailable != "" {
				b.Fatalf("want an unauthenticated Result, got %+v", sink)
			}
		})
	}
	if n := store.reads(); n != 0 {
		b.Fatalf("the fast path read the mesh %d times", n)
	}
}

func BenchmarkAuthenticatedRequestWarmLadder(b *testing.B) {
	a, header, store := warmAuthenticator(b)
	queries := store.queries.Load()
	var sink resultSink
	b.ReportAllocs()
	for b.Loop() {
		sink = resultSink{}
		a.Authenticate(header).Subscribe(&sink)
	}
	if !sink.done || !sink.res.Authenticated() {
		b.Fatalf("want an authenticated Result, got %+v", sink)
	}
	if store.queries.Load() != queries {
		b.Fatal("the warm ladder was read again")
	}
}

// securityTypesQuery reads every node of the fold's types with a query, as a
// fold without a materialisation would have to on every check.
const securityTypesQuery = "nodeType:" + RoleNodeType + "|" + MembershipNodeType + "|" + AssignmentNodeType + "|" + PolicyNodeType + " partitions:all"

func BenchmarkPermissionCheckWith10000Memberships(b *testing.B) {
	s := newSecurityStore(b)
	org(b, s)
	ctx := context.Background()
	check := func(b *testing.B, decide func() access.Decision) {
		b.Helper()
		b.ReportAllocs()
		var d access.Decision
		for b.Loop() {
			d = decide()
		}
		if d != access.Denied {
			b.Fatalf("alice is a contractor: want Denied, got %v", d)
		}
	}

	b.Run("materialised", func(b *testing.B) {
		fs := &FoldSource{Reader: s}
		_, err := fs.Fold(ctx) // built once; every check below reads the version
		require.NoError(b, err)
		check(b, func() access.Decision { return fs.Decide(ctx, "alice", "acme/roadmap/q3", access.Update) })
	})
	b.Run("materialised-fold-only", func(b *testing.B) {
		// The cached fold alone, without the version read: what the check
		// costs once the reader's version check is cheap.
		fold, err := (&FoldSource{Reader: s}).Fold(ctx)
		require.NoError(b, err)
		check(b, func() access.Decision { return fold.Decide("alice", "acme/roadmap/q3", access.Update) })
	})
	b.Run("reread-per-check", func(b *testing.B) {
		check(b, func() access.Decision {
			change, err := rx.First(ctx, s.Query(securityTypesQuery))
			if err != nil {
				b.Fatal(err)
			}
			rows, _, err := BuildAccessSnapshot(change.Items, nil)
			if err != nil {
				b.Fatal(err)
			}
			fold, err := access.NewFold(rows)
			if err != nil {
				b.Fatal(err)
			}
			return fold.Decide("alice", "acme/roadmap/q3", access.Update)
		})
	})
}

// BenchmarkWarmPermissionCheck is one access decision with the fold already
// built and nothing changed, among 10,000 memberships, on each store: as
// FoldSource makes it (it reads the security version: nothing in memory,
// one row on PostgreSQL) beside the way it was made before (a reader
// without a version: the whole materialisation read on every check, only
// to compare its version). On PostgreSQL MESHRX_REQUIRE_PG=1 makes a
// missing server a failure rather than a skip.
func BenchmarkWarmPermissionCheck(b *testing.B) {
	ctx := context.Background()
	stores := []struct {
		name string
		open func(b *testing.B) mesh.Store
	}{
		{"store=memstore", func(b *testing.B) mesh.Store { return newSecurityStore(b) }},
		{"store=pgstore", func(b *testing.B) mesh.Store {
			url := pg.Database(b)
			s, err := pgstore.Open(ctx, url, pgstore.Options{GatedTypes: SecurityTypes()})
			require.NoError(b, err)
			b.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			org(b, s)
			reader := s.(interface {
				mesh.SecurityReader
				mesh.SecurityVersioner
			})
			for _, c := range []struct {
				name   string
				reader mesh.SecurityReader
			}{
				{"check=version", reader},
				{"check=whole-fold(before)", snapshotsOnly{&countingReader{inner: reader}}},
			} {
				b.Run(c.name, func(b *testing.B) {
					fs := &FoldSource{Reader: c.reader}
					_, err := fs.Fold(ctx) // built once; every check below is warm
					require.NoError(b, err)
					b.ReportAllocs()
					var d access.Decision
					for b.Loop() {
						d = fs.Decide(ctx, "alice", "acme/roadmap/q3", access.Update)
					}
					if d != access.Denied {
						b.Fatalf("alice is a contractor: want Denied, got %v", d)
					}
				})
			}
		})
	}
}
