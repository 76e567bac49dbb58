package pgstore

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A fence number no fence was sent with is not believed: a forged one (a
// backend whose process id the sender cache mistook) would otherwise mark
// every query's rows trusted before its own fence came back. Control: the
// number of a fence that was sent is.
func TestAFenceNumberNoFenceWasSentWithIsNotBelieved(t *testing.T) {
	f := newFences()
	f.mu.Lock()
	sent := f.next
	f.next++ // what sendFences does as it sends fence number sent
	f.mu.Unlock()

	f.received("1000000")
	assert.Zero(t, f.seen.Load(), "a number above every fence sent")
	f.received("not a number")
	assert.Zero(t, f.seen.Load())

	f.received(fmtInt(sent))
	assert.Equal(t, sent, f.seen.Load(), "the fence that was sent")
}

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }
