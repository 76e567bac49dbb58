package rx_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/rx"
)

// keeper is a foreign Observable, the one seam a user has to hold All's
// observer: it subscribes Of with the observer it is given and keeps it, so
// a loop body can deliver to it re-entrantly.
type keeper struct{ o rx.Observer[int] }

func (k *keeper) Subscribe(o rx.Observer[int]) rx.Subscription {
	k.o = o
	return rx.Of(1, 2, 3).Subscribe(o)
}

// allLoop (fuse_all.go) runs the body with no flag around it and no flush
// after it, because nothing can deliver to All's observer while the body
// runs there. The only user seam that could, a foreign Observable keeping
// the observer and feeding it from the body, is given a guard by All, so
// its Of never fuses into allLoop and the re-entrant value is queued and
// yielded after the body, never run inside it. Negative control, run: with
// subscribeIn not wrapping foreign sources in a guard (so Of saw All's
// observer and built allLoop, now without its flag) the body's call ran
// the body inside itself, which Go's range-over-func check stops with a
// runtime panic ("range function continued iteration ...").
func TestABodyDeliveringToAForeignSourcesKeptObserverNeverRunsInsideItself(t *testing.T) {
	for _, ctx := range []context.Context{context.Background(), t.Context()} {
		k := &keeper{}
		var got []int
		depth, maxDepth := 0, 0
		for v, err := range rx.All[int](ctx, k) {
			require.NoError(t, err)
			depth++
			maxDepth = max(maxDepth, depth)
			got = append(got, v)
			if v == 1 {
				k.o.OnNext(99)
			}
			depth--
		}
		assert.Equal(t, 1, maxDepth, "the body never runs inside itself")
		assert.Equal(t, []int{1, 99, 2, 3}, got, "queued behind the value whose body caused it")
	}
}
