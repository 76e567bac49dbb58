// Package rx is a typed, push-based reactive streams library in which every
// wait can carry a declared bound on an injected clock.
//
// # The model
//
// An Observable[T] is a cold stream: each Subscribe runs its work afresh and
// delivers to one Observer[T] the grammar
//
//	OnNext* (OnError | OnCompleted)?
//
// Calls into one observer never overlap, and nothing follows a terminal
// notification. A value travels as a function call, not a channel hop:
// Map(Filter(Of(...))) runs on the subscribing goroutine with no locks and no
// allocation per value. Concurrency appears only where a source has it — a
// goroutine in Create or FromChannel, a timer, a Subject fed from several
// goroutines — and the operators that merge such sources (SelectMany, Merge,
// CombineLatest, TakeUntil, the subjects) serialise what they deliver without
// holding a lock while delivering, so an observer may call back into them.
//
// Subscribe returns a Subscription. Unsubscribe stops the work upstream and
// never blocks; it may be called from inside a notification. Once it has
// returned no new notification starts (one that another goroutine was already
// delivering may finish). Synchronous sources check for it before every
// value, so Take over an endless synchronous source terminates.
//
// # Operators
//
// Operators are free functions, because Go methods cannot add type
// parameters: rx.Map(src, f), rx.SelectMany(src, f), rx.Timeout(src, due, clk).
// SelectMany merges its inners as Rx.NET does; ConcatMap runs them one after
// the other. Retry resubscribes; Catch continues with another stream; Share
// multicasts one subscription to many subscribers.
//
// # Bounded waits
//
// Every time-based operator takes a clock.Clock (github.com/benbjohnson/clock):
// production passes clock.New(), tests pass rxtest.NewClock(). A stage that may
// wait is bounded by Timeout, or by TimeoutStage when the error should say what
// was waited on:
//
//	key := rx.TimeoutStage(readIndex(hash), "instance key", 10*time.Second, clk)
//	// fails with *rx.TimeoutError{Stage: "instance key", After: 10s}
//
// Timeout costs one timer per subscription, not per value, and fires exactly
// its bound after the last value. First and Collect bridge a stream to
// blocking Go code under a context.
//
// # Tests in virtual time
//
// Package rxtest provides a virtual clock whose Advance runs due timers in
// order on the calling goroutine, a Recorder that captures notifications with
// their virtual times and checks the grammar, and scripted hot and cold test
// observables, so timing tests read like Rx marble tests and never sleep.
package rx
