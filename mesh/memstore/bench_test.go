package memstore_test

import (
	"context"
	"fmt"
	"runtime"
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
	for b.Loop() {
		c, err := rx.First(ctx, q)
		if err != nil || len(c.Items) != 50 {
			b.Fatalf("got %d rows, %v", len(c.Items), err)
		}
	}
	// Reported after the loop: starting it clears user-reported metrics.
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(size), "heapB/node")
}

func BenchmarkPinnedQueryOver1e5NodePartitionReturning50Rows(b *testing.B) {
	benchPinnedRead(b, 100_000)
}

func BenchmarkPinnedQueryOver1e6NodePartitionReturning50Rows(b *testing.B) {
	benchPinnedRead(b, 1_000_000)
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
