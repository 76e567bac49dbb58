package rxbench

import (
	"sync/atomic"
	"testing"
)

// BenchmarkB16MailboxAtomics: what the locked instructions of a mailbox's
// uncontended path cost on this machine, with nothing else around them but
// a call through a func value per value (1e5 values per op):
//
//   - op=call: the call alone (the B14 loop's per-value work);
//   - op=cas-pair: a compare-and-swap to take a word and one to give it back
//     around the call, as Subject.OnNext does with its mailbox;
//   - op=cas-swap: the same with the release a Swap (XCHG; Go's
//     atomic.Store is also XCHG on amd64): a release that reads what was
//     queued meanwhile costs a locked instruction either way;
//   - op=one-add: one locked add per value, the floor of any protocol that
//     makes one read-modify-write per value.
//
// These are the costs in a loop that does nothing else. Inside
// Subject.OnNext the CPU overlaps the two compare-and-swaps with the
// delivery, and they cost about 1 ns there: rx's BenchmarkSubjectParts and
// rx/rxbench/ablate_subject.sh measure them in place (docs/performance.md).
func BenchmarkB16MailboxAtomics(b *testing.B) {
	xs := make([]int, b14N)
	for i := range xs {
		xs[i] = i
	}
	st := newFns()
	var word struct {
		_ [64]byte
		w atomic.Uintptr
		_ [64]byte
	}
	const g = 0xc000 // an owner id, as curg() gives
	b.Run("op=call", func(b *testing.B) {
		perItem(b, b14N, func() {
			s := 0
			for _, x := range xs {
				s += st.f(x)
			}
			sink = s
		})
	})
	b.Run("op=cas-pair", func(b *testing.B) {
		perItem(b, b14N, func() {
			s := 0
			for _, x := range xs {
				if !word.w.CompareAndSwap(0, g) {
					b.Fatal("taken")
				}
				s += st.f(x)
				if !word.w.CompareAndSwap(g, 0) {
					b.Fatal("queued")
				}
			}
			sink = s
		})
	})
	b.Run("op=cas-swap", func(b *testing.B) {
		perItem(b, b14N, func() {
			s := 0
			for _, x := range xs {
				if !word.w.CompareAndSwap(0, g) {
					b.Fatal("taken")
				}
				s += st.f(x)
				if word.w.Swap(0) != g {
					b.Fatal("queued")
				}
			}
			sink = s
		})
	})
	b.Run("op=one-add", func(b *testing.B) {
		perItem(b, b14N, func() {
			s := 0
			for _, x := range xs {
				word.w.Add(2)
				s += st.f(x)
			}
			sink = s
		})
	})
}
