package rx_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/meshrx/meshrx/rx"
)

// Re-entry into a fused chain from its own user functions: a function that
// calls Unsubscribe on the chain's own Subscription (not a TakeUntil below
// it: the Subscription Subscribe returned), and a function that panics,
// after which the same observable is subscribed again (cold state afresh:
// Skip's count, Scan's accumulator, DistinctUntilChanged's last value,
// Take's count). Every chain of the differential table (dChains), fused and
// split, over a Subject (delivering after Subscribe returned, so the
// Subscription exists) and, for the panics, over every synchronous source;
// the logs must be identical, and nothing but Finally may follow an
// Unsubscribe.

// reentryRun subscribes chain over a new source of n values (a Subject is
// fed after Subscribe returned), with the action at the at-th user
// function call, and then, after a panic, subscribes the same observable
// again and feeds it again.
func reentryRun(so dSource, n int, chain []string, split bool, how string, at int) []string {
	p := &dProbe{where: "fn", how: how, at: at}
	src, feed := so.make(n)
	obs := dBuild(p, src, chain, split)
	var sub rx.Subscription
	p.unsub = func() { sub.Unsubscribe() }
	o := rx.NewObserver(func(v int) { p.add("next " + strconv.Itoa(v)) },
		func(err error) { p.add("error " + err.Error()) }, func() { p.add("completed") })
	subscribe := func(round string) {
		p.add(round)
		if r := recovered(func() {
			sub = obs.Subscribe(o)
			if feed != nil {
				feed()
			}
		}); r != nil {
			p.add(fmt.Sprint("panic ", r))
		}
	}
	subscribe("first")
	if how == "panic" {
		subscribe("again")
	}
	if sub != nil {
		sub.Unsubscribe()
	}
	p.add("end")
	return p.log
}

// TestUnsubscribingOrPanickingFromAFusedChainsOwnFunctionBehavesAsUnfused
// is the probe above (about 2 s under -race). Negative control, run by
// hand on fuse.go: without the scope check after Map's function in
// mapFilter (a Subject's Map→Filter pair), "[Map Filter] over
// Subject(200), unsub@fn1: fused [first map 0 unsubscribe filter 1 end],
// split [first map 0 unsubscribe end]".
func TestUnsubscribingOrPanickingFromAFusedChainsOwnFunctionBehavesAsUnfused(t *testing.T) {
	const n = 200
	fails := 0
	for _, so := range dSources() {
		if !so.ok(n) {
			continue
		}
		for _, chain := range dChains() {
			for _, how := range []string{"unsub", "panic"} {
				if how == "unsub" && so.name != "Subject" {
					continue // a synchronous source delivers before its Subscription exists
				}
				for _, at := range []int{1, 2, 63, 64, 65, 130} {
					fused := reentryRun(so, n, chain, false, how, at)
					split := reentryRun(so, n, chain, true, how, at)
					bad := !slices.Equal(fused, split)
					if i := slices.Index(fused, "unsubscribe"); i >= 0 && !bad {
						for _, s := range fused[i+1:] {
							if s != "finally" && s != "end" {
								bad = true
							}
						}
					}
					if bad {
						if fails++; fails <= 5 {
							t.Errorf("%v over %s(%d), %s@fn%d:\n fused: %v\n split: %v", chain, so.name, n, how, at, diffTail(fused, split), diffTail(split, fused))
						}
					}
				}
			}
		}
	}
	if fails > 0 {
		t.Errorf("%d runs differ", fails)
	}
}
