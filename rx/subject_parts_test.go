package rx

import "testing"

// subjectPartsN is the number of values per operation of
// BenchmarkSubjectParts.
const subjectPartsN = 10_000

//go:noinline
func partsMap(v int) int { return v + 1 }

//go:noinline
func partsKeep(v int) bool { return v&1 == 0 }

// BenchmarkSubjectParts splits what a value costs through
// Subject.OnNext → Map → Filter → an observer that counts (B14's Subject
// map-filter row) into what the user's work costs and what rx adds, each
// per value:
//
//   - part=loop: the loop through func values doing the same work (B14's
//     baseline);
//   - part=step: the fused chain's step called directly, as the Subject
//     calls it (the stages' functions, their scope checks, the observer's
//     OnNext through its interface);
//   - part=onnext: Subject.OnNext, which adds to the step what the
//     subject's contract costs: the ended check, the caller's goroutine
//     identity (a re-entrant call must be queued, never nested), taking and
//     releasing the mailbox (producers on several goroutines) and the
//     deferred release a panicking chain needs.
//
// docs/performance.md reads the three side by side, with the contract's
// parts measured by removing each in a scratch build.
func BenchmarkSubjectParts(b *testing.B) {
	f, k := partsMap, partsKeep
	count := 0
	subscribe := func() (*Subject[int], func(int) bool) {
		s := NewSubject[int]()
		Filter(Map(Observable[int](s), f), k).Subscribe(NewObserver(func(int) { count++ }, nil, nil))
		cur := s.list.Load()
		if cur == nil || len(*cur) != 1 || (*cur)[0].step == nil {
			b.Fatal("the subject does not deliver through a fused step")
		}
		return s, (*cur)[0].step
	}
	perValue := func(b *testing.B, run func()) {
		b.ReportAllocs()
		for b.Loop() {
			run()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/subjectPartsN, "ns/value")
	}
	b.Run("part=loop", func(b *testing.B) {
		perValue(b, func() {
			for i := range subjectPartsN {
				if k(f(i)) {
					count++
				}
			}
		})
	})
	b.Run("part=step", func(b *testing.B) {
		_, step := subscribe()
		perValue(b, func() {
			for i := range subjectPartsN {
				step(i)
			}
		})
	})
	b.Run("part=onnext", func(b *testing.B) {
		s, _ := subscribe()
		perValue(b, func() {
			for i := range subjectPartsN {
				s.OnNext(i)
			}
		})
	})
	if count == 0 {
		b.Fatal("the observer counted nothing")
	}
}
