package rx_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/meshrx/meshrx/rx"
)

// A fused chain keeps its stages' state (Scan's accumulator, Skip's and
// Take's counts, SkipWhile's passing, TakeWhile's end,
// DistinctUntilChanged's last value) in the observers of one subscription:
// an operator that subscribes the same chain again (Repeat, Retry, Catch,
// Concat of it twice) must find every stage restarted, exactly as the same
// stages reached through OnNext restart.
//
// Negative control (run): with scanObserver.rxStage handing the fused run
// an accumulator shared by every subscription (a package-level variable in
// place of &s.acc), the test fails for Scan ("Catch [Filter Scan] over
// Range, plain: fused [... fn 11 fn 0 fn 0 next 40 ...], unfused [... fn
// 11 fn 0 fn 0 next 0 ...]": the second subscription went on from the
// first's sum).
func TestResubscribingAFusedChainRestartsEveryStageAsUnfused(t *testing.T) {
	errAgain := errors.New("again")
	again := map[string]func(rx.Observable[int]) rx.Observable[int]{
		"Repeat": func(c rx.Observable[int]) rx.Observable[int] { return rx.Repeat(c, 3) },
		"Retry": func(c rx.Observable[int]) rx.Observable[int] {
			return rx.Retry(rx.Concat(c, rx.Throw[int](errAgain)), 3)
		},
		"Catch": func(c rx.Observable[int]) rx.Observable[int] {
			return rx.Catch(rx.Concat(c, rx.Throw[int](errAgain)), func(error) rx.Observable[int] { return c })
		},
		"Concat": func(c rx.Observable[int]) rx.Observable[int] { return rx.Concat(c, c) },
	}
	var chains [][]string
	for name := range fusable() {
		chains = append(chains, chainsWith(name)...)
	}
	for wrap, w := range again {
		for _, chain := range chains {
			for _, so := range fsources() {
				for _, sc := range scenarios() {
					fused := resubscribeRun(so, chain, false, sc, w)
					split := resubscribeRun(so, chain, true, sc, w)
					if !slices.Equal(fused, split) {
						t.Fatalf("%s %v over %s, %v:\n fused:   %v\n unfused: %v", wrap, chain, so.name, sc, fused, split)
					}
				}
			}
		}
	}
}

// resubscribeRun is runChain (fusion_test.go) with the chain subscribed
// again by w; a Subject source is fed after subscription, and its values
// reach each subscription made while they are fed.
func resubscribeRun(so fsource, names []string, split bool, sc scenario, w func(rx.Observable[int]) rx.Observable[int]) []string {
	log, _ := runChainIn(so, names, split, sc, w, true)
	return log
}
