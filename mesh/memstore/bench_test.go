package memstore_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// benchPinnedRead measures one pinned read, subscribe to Initial to
// unsubscribe, over a partition of size nodes of which the query's namespace
// holds 50.
func benchPinnedRead(b *testing.B, size int) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := newStore(b, memstore.Options{Clock: rxtest.NewClock()})
	fill(b, s, size-60)
	runtime.GC()
	runtime.ReadMemStats(&after)

	ctx := context.Background()
	q := s.Query("namespace:acme/hot")
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for b.Loop() {
		c, err := rx.First(ctx, q)
		if err != nil || len(c.Items) != 50 {
			b.Fatalf("got %d rows, %v", len(c.Items), err)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
	// Reported after the loop: starting it clears user-reported metrics.
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(size), "heapB/node")
}

// BenchmarkPinnedQueryReturning50Rows reads the same 50 rows out of
// partitions of 1e4, 1e5 and 1e6 nodes: the cost must not grow with the
// partition, and heapB/node says what a stored node costs.
func BenchmarkPinnedQueryReturning50Rows(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"nodes=1e4", 10_000}, {"nodes=1e5", 100_000}, {"nodes=1e6", 1_000_000}} {
		b.Run(size.name, func(b *testing.B) { benchPinnedRead(b, size.n) })
	}
}

// BenchmarkPutWith100LiveQueries measures each Put's latency with 100 live
// queries open: 99 on other namespaces of the partition (settled without
// matching) and one on the written namespace, which receives a frame for
// every write. Its subscriber is either keeping up (blocked=0) or blocked
// for the whole run (blocked=1). A writer never waits for a subscriber, so
// the two p99s must be equal within noise.
func BenchmarkPutWith100LiveQueries(b *testing.B) {
	for _, blocked := range []int{0, 1} {
		b.Run(fmt.Sprintf("blocked=%d", blocked), func(b *testing.B) { benchPutBeside(b, blocked) })
	}
}

func benchPutBeside(b *testing.B, blocked int) {
	s := newStore(b, memstore.Options{Clock: rxtest.NewClock()})
	fill(b, s, 10_000)
	release := make(chan struct{})
	b.Cleanup(func() { close(release) }) // runs before the store's Close: the blocked drain ends
	for i := range 99 {
		sub := s.Query(fmt.Sprintf("namespace:acme/ns%05d", i)).Subscribe(rx.NewObserver[mesh.Change](nil, nil, nil))
		b.Cleanup(sub.Unsubscribe)
	}
	var frames atomic.Int64
	hot := s.Query("namespace:acme/hot").Subscribe(rx.NewObserver(func(c mesh.Change) {
		if blocked > 0 && c.Kind != mesh.Initial {
			<-release
		}
		frames.Add(1)
	}, func(err error) { b.Error(err) }, nil))
	b.Cleanup(hot.Unsubscribe)

	ctx := context.Background()
	n := mesh.Node{Path: "acme/hot/n07", NodeType: "Hot"}
	latencies := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		n.Content = fmt.Appendf(n.Content[:0], `{"rank":%d}`, 1000+i)
		start := time.Now()
		if _, err := s.Put(ctx, n); err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Nanoseconds()), "p50-ns/put")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Nanoseconds()), "p99-ns/put")
	if blocked > 0 && frames.Load() > 1 {
		b.Fatalf("the blocked subscriber received %d frames while blocked", frames.Load())
	}
}

// BenchmarkLiveQueryUpdateLatencyPerWrite measures, per write, the time from
// calling Put to the Updated frame reaching a live query's observer, with
// 100 other live queries on the same partition.
func BenchmarkLiveQueryUpdateLatencyPerWrite(b *testing.B) {
	s := newStore(b, memstore.Options{Clock: rxtest.NewClock()})
	fill(b, s, 10_000)
	for i := range 100 {
		sub := s.Query(fmt.Sprintf("namespace:acme/ns%05d", i)).Subscribe(rx.NewObserver[mesh.Change](nil, nil, nil))
		b.Cleanup(sub.Unsubscribe)
	}
	updated := make(chan struct{}, 1)
	sub := s.Query("namespace:acme/hot").Subscribe(rx.NewObserver(func(c mesh.Change) {
		if c.Kind == mesh.Updated {
			updated <- struct{}{}
		}
	}, func(err error) { b.Error(err) }, nil))
	b.Cleanup(sub.Unsubscribe)

	ctx := context.Background()
	stuck, cancel := context.WithTimeout(ctx, benchBound)
	defer cancel()
	n := mesh.Node{Path: "acme/hot/n07", NodeType: "Hot"}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		n.Content = fmt.Appendf(n.Content[:0], `{"rank":%d}`, 1000+i) // fill wrote rank 1
		if _, err := s.Put(ctx, n); err != nil {
			b.Fatal(err)
		}
		select { // delivered by the query's own drain
		case <-updated:
		case <-stuck.Done():
			b.Fatalf("write %d: no Updated frame; the benchmark's bound of %s passed", i, benchBound)
		}
	}
}

// benchBound bounds a whole benchmark's waits for frames.
const benchBound = 2 * time.Minute
