package pgstore

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// latencyBuckets is the number of a Latency's buckets: 1 µs wide below
// 8 µs, then eight per power of two up to 2^34 µs (about 4.8 hours).
const latencyBuckets = 8 + 31*8

// Latency is a histogram of durations with a fixed, small size (2 KB),
// so the store can keep one for as long as it runs. Below 8 µs a bucket
// is one microsecond wide, so a quantile there is at most 1 µs above the
// duration it stands for (which may be many times it); from 8 µs each
// power of two is cut into eight, so a quantile is at most 12.5 % above
// it. Longer durations than the last bucket count in the last bucket.
type Latency struct {
	counts [latencyBuckets]int64
}

// bucketOf returns the bucket holding d.
func bucketOf(d time.Duration) int {
	us := uint64(max(d, 0) / time.Microsecond)
	if us < 8 {
		return int(us)
	}
	e := bits.Len64(us) - 1 // 3 or more
	i := (e-2)*8 + int(us>>(e-3))&7
	return min(i, latencyBuckets-1)
}

// upperEdge returns the smallest duration above bucket i.
func upperEdge(i int) time.Duration {
	if i < 8 {
		return time.Duration(i+1) * time.Microsecond
	}
	e, sub := i/8+2, i%8
	return time.Duration(uint64(9+sub)<<(e-3)) * time.Microsecond
}

// Count returns how many durations l holds.
func (l Latency) Count() int64 {
	var n int64
	for _, c := range l.counts {
		n += c
	}
	return n
}

// Quantile returns the q-quantile (0 < q ≤ 1) of the durations, rounded up
// to the upper edge of its bucket; 0 when l holds none.
func (l Latency) Quantile(q float64) time.Duration {
	total := l.Count()
	if total == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(q*float64(total))), 1)
	var seen int64
	for i, c := range l.counts {
		if seen += c; seen >= rank {
			return upperEdge(i)
		}
	}
	return upperEdge(latencyBuckets - 1)
}

// Sub returns the durations l holds that earlier did not: for two
// snapshots of one store's Stats, those recorded between them.
func (l Latency) Sub(earlier Latency) Latency {
	for i := range l.counts {
		l.counts[i] -= earlier.counts[i]
	}
	return l
}

// Add returns the durations of l and other together (of two stores, say).
func (l Latency) Add(other Latency) Latency {
	for i := range l.counts {
		l.counts[i] += other.counts[i]
	}
	return l
}

// MarshalJSON writes the bucket counts as an array (trailing empty
// buckets left out), so a histogram can travel between processes.
func (l Latency) MarshalJSON() ([]byte, error) {
	n := len(l.counts)
	for n > 0 && l.counts[n-1] == 0 {
		n--
	}
	return json.Marshal(l.counts[:n])
}

// UnmarshalJSON reads what MarshalJSON wrote. A nil l is an
// *mesh.ArgumentError.
func (l *Latency) UnmarshalJSON(b []byte) error {
	if l == nil {
		return nilArg("(*Latency).UnmarshalJSON", "receiver")
	}
	var counts []int64
	if err := json.Unmarshal(b, &counts); err != nil {
		return err
	}
	if len(counts) > latencyBuckets {
		return fmt.Errorf("pgstore: a Latency has %d buckets, not %d", latencyBuckets, len(counts))
	}
	*l = Latency{}
	copy(l.counts[:], counts)
	return nil
}

// latencyRecorder is a Latency that goroutines add to at once.
type latencyRecorder struct {
	counts [latencyBuckets]atomic.Int64
}

func (r *latencyRecorder) observe(d time.Duration) { r.counts[bucketOf(d)].Add(1) }

func (r *latencyRecorder) snapshot() Latency {
	var l Latency
	for i := range r.counts {
		l.counts[i] = r.counts[i].Load()
	}
	return l
}
