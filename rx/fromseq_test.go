package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
)

// TestFromSeqComputesNoValuePastAnUnsubscriptionInsideAFusedChain: the
// observer below a fused Map unsubscribes (through TakeUntil, on the
// delivering goroutine) inside its third value; seq must not be asked for a
// fourth. Negative control: without the check after the value in
// fusedYield (fromseq.go) seq computes the fourth value (produced is 4),
// which the check before the next value then drops.
func TestFromSeqComputesNoValuePastAnUnsubscriptionInsideAFusedChain(t *testing.T) {
	for _, fused := range []bool{true, false} {
		produced := 0
		seq := func(yield func(int) bool) {
			for i := range 10 {
				produced++
				if !yield(i) {
					return
				}
			}
		}
		stop := rx.NewSubject[int]()
		var got []int
		o := rx.NewObserver(func(v int) {
			got = append(got, v)
			if len(got) == 3 {
				stop.OnNext(0)
			}
		}, nil, nil)
		var src rx.Observable[int] = rx.FromSeq(seq)
		if !fused {
			src = unfused{src}
		}
		rx.TakeUntil(rx.Map(src, func(v int) int { return v * 10 }), stop).Subscribe(o)
		assert.Equal(t, []int{0, 10, 20}, got, "fused %v", fused)
		assert.Equal(t, 3, produced, "fused %v: seq computed a value past the unsubscription", fused)
	}
}
