// Package rxtest tests rx streams in virtual time.
//
// NewClock returns a Clock that satisfies clock.Clock, so it can be injected
// wherever production code takes a clock, and rx.Scheduler, so rx's time
// operators put their timers on it. Advance moves virtual time forward and
// runs every timer that falls due, in due order and first-scheduled first on
// ties, on the calling goroutine, returning once they have run: a test
// advances the clock and asserts, with no sleeps and no flakes. Durations
// that would overflow are clamped (such a timer never runs, and Advance never
// wraps). Sleep and After wait on the same virtual time, and BlockUntil lets
// a test wait, for a bounded real time, until a sleeper on another goroutine
// has registered before it advances.
//
// A Recorder captures a stream's notifications with their virtual times and
// flags grammar violations (anything after a terminal notification, or two
// calls at once). Hot and Cold build scripted sources that log their
// subscription spans (a Hot source does not replay an ending to a later
// subscriber, and ScriptErr reports events scripted after an ending), and
// Start runs the Rx.NET TestScheduler shape
// (subscribe at one instant, unsubscribe at another), so Rx.NET marble tests
// port almost line for line. Hot notifies its subscribers in the order they
// subscribed; Hot and Cold may be subscribed on any goroutine, also while
// another advances the clock.
//
// # Testing a consumer loop in virtual time
//
// Code that consumes a stream with a for loop over rx.All (or with rx.First,
// rx.Collect) blocks while it waits for the next value, so it cannot advance
// the clock itself. Drive does it for it:
//
//	clk := rxtest.NewClock()
//	pipeline := build(clk) // the code under test, given the virtual clock
//	for v, err := range rx.All(ctx, rxtest.Drive(clk, pipeline)) {
//		if err != nil {
//			... // the pipeline's error, or rxtest.ErrStalled
//		}
//		got = append(got, fmt.Sprint(clk.Elapsed(), v)) // each value at its virtual time
//	}
//
// Drive subscribes the pipeline on the ranging goroutine (rx.All runs the
// loop body right inside deliveries made there), then advances the clock
// there too, from one due timer to the next, a step at a time: each step
// returns only once the loop body has handled what it delivered,
// so every run yields the same values at the same virtual times, with no
// sleep and no real waiting. A pipeline that waits while no timer is pending
// fails with ErrStalled rather than hanging the test. Rules: build every
// time-based stage on the one clock, do not call Advance from the loop body,
// and keep real goroutines out of the pipeline (feed it from Hot, Cold or a
// subject pushed from a timer scheduled on the clock). The Example of Drive
// runs the recipe, and TestAConsumerLoopInVirtualTimeIsDeterministicOverAThousandRuns
// runs a mixed pipeline (merged intervals, Debounce, Timeout) 1,000 times
// under -race.
//
// # Examples
//
// Example and ExampleDrive (example_test.go, drive_example_test.go) are worked examples,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./rx/rxtest/.
package rxtest
