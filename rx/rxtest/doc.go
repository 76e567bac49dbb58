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
// port almost line for line.
//
// # Examples
//
// Example (example_test.go) is a worked example,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./rx/rxtest/.
package rxtest
