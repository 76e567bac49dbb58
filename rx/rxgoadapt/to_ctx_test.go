package rxgoadapt_test

import (
	"context"
	"math"
	"testing"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxgoadapt"
	"github.com/reactivex/rxgo/v2"
	"go.uber.org/goleak"
)

// A consumer's cancellation must reach a source that is busy inside its
// Subscribe without sending anything: here an endless synchronous Range
// whose every value a Filter drops, so no send ever meets the context. The
// context may end while the source runs, or before Observe is even called.
//
// Negative controls (run): with produce's context.AfterFunc removed, both
// cases fail — the producing goroutine loops on forever ("waited 5s for the
// rx subscription to end after the consumer cancelled", "waited 5s for an
// rxgo channel to close"); with the halt a plain Subject again, the
// already-cancelled case failed in 5 of 8 separate runs ("waited 5s for an
// rxgo channel to close": the halt was sent before TakeUntil had
// subscribed to it, and lost).
func TestToRxGoEndsASynchronousSourceThatSendsNothingWhenTheConsumerCancels(t *testing.T) {
	for _, early := range []bool{false, true} {
		name := "cancelled while the source runs"
		if early {
			name = "cancelled before Observe"
		}
		t.Run(name, func(t *testing.T) {
			unsubscribed := make(chan struct{})
			subscribed := make(chan struct{})
			src := rx.Finally(rx.Filter(rx.Range(0, math.MaxInt), func(v int) bool {
				if v == 0 {
					close(subscribed)
				}
				return false
			}), func() { close(unsubscribed) })
			ctx, cancel := context.WithCancel(boundedCtx(t))
			defer cancel()
			if early {
				cancel()
			}
			items := rxgoadapt.ToRxGo(src).Observe(rxgo.WithContext(ctx))
			if !early {
				waitClosed(t, subscribed, "the producer to subscribe")
				cancel()
			}
			if !early {
				waitClosed(t, unsubscribed, "the rx subscription to end after the consumer cancelled")
			}
			// The producer returns (rxgo closes the channel) either way; a
			// halt that comes first keeps src from being subscribed at all.
			readRxGo(t, items)
			goleak.VerifyNone(t)
		})
	}
}
