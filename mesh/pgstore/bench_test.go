package pgstore

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore/internal/sqlgen"
	"github.com/meshrx/meshrx/rx"
)

// benchSizes are the partition sizes BenchmarkPinnedInitial fills, in
// nodes; the 1e6 fill takes minutes, so it is asked for by flag:
//
//	go test -run '^$' -bench PinnedInitial -pgstore.sizes 1000,100000,1000000 ./mesh/pgstore/
var benchSizes = flag.String("pgstore.sizes", "1000", "comma-separated partition sizes for BenchmarkPinnedInitial")

// rawPinned is the hand-written indexed statement returning the rows the
// pinned Initial of scaleQuery returns.
const rawPinned = `SELECT ` + nodeColumns + ` FROM scale.mesh_nodes
	WHERE ns_key = 'scale' AND type_key = 'item' ORDER BY path COLLATE "C"`

// BenchmarkPinnedInitial times, side by side on one store and its pool,
// the Initial of the pinned query through Store.Query and the hand-written
// indexed statement scanned into nodes, on a partition of each size with 50
// matching rows. Each iteration runs both, alternating which goes first, so
// both see the same machine; it reports each one's p50 (store-p50-µs,
// raw-p50-µs) and their ratio. ns/op is the pair.
func BenchmarkPinnedInitial(b *testing.B) {
	for _, field := range strings.Split(*benchSizes, ",") {
		size, err := strconv.Atoi(strings.TrimSpace(field))
		require.NoError(b, err, "-pgstore.sizes")
		b.Run(fmt.Sprintf("nodes=%d", size), func(b *testing.B) {
			ctx := b.Context()
			s := openBenchStore(b)
			fillScale(ctx, b, s, size, true)
			store := func() {
				c, err := rx.First(ctx, s.Query(scaleQuery))
				if err != nil || len(c.Items) != scaleMatching {
					b.Fatalf("query: %d items, %v", len(c.Items), err)
				}
			}
			raw := func() {
				rows, err := s.pool.Query(ctx, rawPinned)
				if err != nil {
					b.Fatal(err)
				}
				nodes, err := pgx.CollectRows(rows, collectNode)
				if err != nil || len(nodes) != scaleMatching {
					b.Fatalf("raw: %d rows, %v", len(nodes), err)
				}
			}
			parsed, err := mesh.Parse(scaleQuery)
			require.NoError(b, err)
			sel, err := sqlgen.BuildTables(parsed, []string{NodesTable}, []string{"scale"})
			require.NoError(b, err)
			gen := func() {
				rows, err := s.pool.Query(ctx, sel.SQL, sel.Args...)
				if err != nil {
					b.Fatal(err)
				}
				nodes, err := pgx.CollectRows(rows, collectNode)
				if err != nil || len(nodes) != scaleMatching {
					b.Fatalf("gen: %d rows, %v", len(nodes), err)
				}
			}
			store() // plan caches and connections warm for both
			raw()
			gen()
			var genTimes []time.Duration
			var storeTimes, rawTimes []time.Duration
			timed := func(f func(), into *[]time.Duration) {
				began := time.Now()
				f()
				*into = append(*into, time.Since(began))
			}
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					timed(store, &storeTimes)
					timed(raw, &rawTimes)
					timed(gen, &genTimes)
				} else {
					timed(gen, &genTimes)
					timed(raw, &rawTimes)
					timed(store, &storeTimes)
				}
				i++
			}
			sp, rp := p50(storeTimes), p50(rawTimes)
			b.ReportMetric(float64(sp.Microseconds()), "store-p50-µs")
			b.ReportMetric(float64(rp.Microseconds()), "raw-p50-µs")
			b.ReportMetric(float64(p50(genTimes).Microseconds()), "gen-p50-µs")
			b.ReportMetric(float64(sp)/float64(rp), "store/raw")
		})
	}
}

func p50(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func openBenchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(b.Context(), pg.Database(b), Options{})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, s.Close()) })
	return s
}
