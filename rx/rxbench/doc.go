// Package rxbench measures package rx side by side with a plain Go loop (and
// an iter.Seq pipeline), github.com/reactivex/rxgo/v2 and github.com/samber/ro,
// in one go test -bench run. It holds no library code: the benchmarks and the
// bounded tests that show where a library does not terminate or leaks live in
// its _test.go files.
//
// Cases, named BenchmarkB<n><Case>/<size>/lib=<library>:
//
//	B1  Range → Map(x*2) → Filter(x%4==0) → sum, n = 1e3 and 1e6
//	B2  k × Map over 1e5 values, k = 1, 4, 16
//	B3  subscription setup: Return(1) → Map → subscribe → complete, per op
//	B4  SelectMany 1e3 outer × 1e2 synchronous inner (merge and concat, labelled)
//	B5  Timeout(1h) overhead per value, and the cost of the clock reads behind it
//	B6  Subject fan-out to 1, 10, 100 observers × 1e5 values
//	B9  Take(1) over an endless source, and the goroutines left after it
//	B10 the rxgoadapt adapters, per value
//	B14 every fused shape of issue 20 over Range, Of, FromSeq and a Subject, beside the loop through func values
//	B15 range rx.All over a synchronous source and over a goroutine producer
//	B12 the operators of issue 10 that ro also has, over 1e5 synchronous values
//	B13 a for-range loop over rx.All against Collect then range, 1e4 values
//	B21 one call of All, First and Collect over Of(1), with a ctx that can end and one that cannot
//
// Every benchmark reports ns/item and allocs/item where a per-value figure
// makes sense, and fails if goroutines are left running after it.
package rxbench
