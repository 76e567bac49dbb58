package landing

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
)

// BenchmarkAReconciliationPassOnS3 measures, at 10,000 modules on the test
// S3 server (in process), a reconciliation pass by the journal after 10
// publications, beside the full walk from the same snapshot: the requests
// the server received per pass (requests/pass, walk_requests) and the
// time of a pass (ns/op). Setup lands the modules (minutes):
//
//	go test -run '^$' -bench BenchmarkAReconciliationPassOnS3 -benchtime 3x ./registry/landing/
func BenchmarkAReconciliationPassOnS3(b *testing.B) {
	const n, writers, changed = 10_000, 8, 10
	ctx := b.Context()
	srv := s3test.Start(b)
	open := func(name string) *ModuleLanding {
		v, err := s3volume.New(s3volume.Options{Client: srv.Client(), Bucket: srv.Bucket, Prefix: "bench"})
		require.NoError(b, err)
		l, err := NewModuleLanding(v, Options{Replica: name, Logger: quietLogger()})
		require.NoError(b, err)
		b.Cleanup(func() { _ = l.Close() })
		return l
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := open(fmt.Sprintf("w%d", w))
			for i := w; i < n; i += writers {
				m := fmt.Sprintf("Mod%05d", i)
				if _, err := l.Land(ctx, m, "1.0.0", testkit.ModuleArchive(b, m, "1.0.0", 1)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	a, r := open("a"), open("b")
	act, err := r.ReconcileChanges(ctx, Activation{}) // the first pass walks
	require.NoError(b, err)
	act, err = r.ReconcileChanges(ctx, act) // and the next reads the walk's backlog
	require.NoError(b, err)
	requests := 0
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for j := range changed {
			m := fmt.Sprintf("Mod%05d", (i*changed+j)*997%n)
			v := fmt.Sprintf("2.0.%d", i)
			_, err := a.Land(ctx, m, v, testkit.ModuleArchive(b, m, v, 1))
			require.NoError(b, err)
		}
		before := srv.Requests()
		b.StartTimer()
		act, err = r.ReconcileChanges(ctx, act)
		b.StopTimer()
		require.NoError(b, err)
		requests += srv.Requests() - before
		require.Len(b, act.Modules, n)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(requests)/float64(b.N), "requests/pass")
	before := srv.Requests()
	walk, err := r.Reconcile(ctx, act)
	require.NoError(b, err)
	require.Len(b, walk.Modules, n)
	b.ReportMetric(float64(srv.Requests()-before), "walk_requests")
}
