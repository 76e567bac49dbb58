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
// Map(Filter(Range(...))) runs on the subscribing goroutine with no locks and
// no allocation per value. A synchronous source (Range, Of, FromSeq,
// Defer of one, a Subject) hands its loop to the chain of stateless stages
// below it — Map, Filter, Do, Skip, Take, TakeWhile, SkipWhile, Scan,
// DistinctUntilChanged, any number in any order — which then runs as one loop
// calling the user's functions directly, with the same checks as unfused
// (operator fusion, decided at subscription; docs/performance.md gives the
// figures). Concurrency appears only where a source has it — a
// goroutine in Create or FromChannel, a timer, a Subject fed from several
// goroutines.
//
// # Concurrency and back-pressure
//
// The operators that funnel concurrent producers into one observer (Merge,
// SelectMany, CombineLatest2, TakeUntil, Create's observer, the subjects,
// ConcatMap's output, and MergeAll, SelectManyLimit, ConcatAll, Expand,
// CombineLatest, Zip, ForkJoin, WithLatestFrom, Sample, WindowTime and
// RetryWhen) serialise what they deliver without holding a lock while
// delivering, and in bounded memory:
//
//   - A producer that finds the consumer idle delivers its value itself, on
//     its own goroutine.
//   - A producer on another goroutine that finds the consumer busy queues its
//     value when fewer than 32 are queued, and otherwise waits until there is
//     room — or until its subscription or the stage it feeds ends, where it
//     has one (Create's producer, a FromChannel source, a merged inner, a
//     stage that fails from inside a delivery); then the value is dropped
//     and OnNext returns. A FromChannel source waiting so stops receiving, so
//     its channel carries the back-pressure, as Go programs expect. Values in
//     transit are thus a small constant per operator plus one per waiting
//     producer, whatever the rates.
//   - At each such stage, one OnNext call delivers its own value plus a
//     bounded number of others' (at most 64 more): a delivering producer
//     that has run its budget makes newcomers wait, finishes what is queued,
//     and hands over. The bound is per stage, not end to end: each of the
//     others it delivers may, at a fan-in stage further down, deliver up to
//     64 more there (k stacked fan-in stages multiply the bound k times).
//   - A panic in a delivery (an observer's OnNext, a user function below
//     it) goes on up to the caller of OnNext and releases the stage: the
//     values others queued meanwhile stay queued, in order, for the next
//     call, waiting producers are released, and a subject stays usable for
//     all its subscribers.
//   - A call made from inside a delivery, on the delivering goroutine (an
//     observer calling back into the Subject it observes), is queued behind
//     the current delivery and never waits, so it cannot deadlock.
//   - A terminal notification is never made to wait.
//
// Synchronous chains need none of this: a slow observer simply slows the
// loop that calls it. Some operators hold values by their meaning, not in
// transit, each within the bound its doc comment states (the bound table,
// conformance_bounds_test.go, classifies every function). ConcatMap queues
// at most QueueLimit outer values while an inner runs, and Delay at most
// QueueLimit values waiting for their time; a producer on another goroutine
// beyond that waits for room, as at a mailbox, until its subscription ends,
// so nothing is lost and the order is kept (a value that must not wait —
// re-entrant, or from a source emitting inside Subscribe — fails the stream
// with an *OverflowError). BufferTime's window holds what arrives within it
// (bound the source's rate); Collect, ToMap, Distinct, DistinctBy and a
// ReplaySubject of size <= 0 hold their result, the whole input or its
// distinct keys (bound an open source).
//
// # Cancellation
//
// Subscribe returns a Subscription. Unsubscribe stops the work upstream; it
// may be called from any goroutine, from inside a notification and from
// inside a user function (Map's f, a Filter predicate, a SelectMany
// selector). As Rx.NET's Dispose, it never waits for an observer or a user
// function: it returns at once, even while another goroutine is blocked
// inside this subscription's OnNext. Once it has returned, no notification
// starts: every stage checks the subscription immediately before it calls
// the stage below it (a timer's callback included) and again after each
// user function it calls, so the value whose function unsubscribed is not
// delivered, and a timer due at the same virtual instant as the
// unsubscription delivers nothing. A clock is user code too: the time
// operators check again after reading it or arming a timer on it. A
// notification another goroutine had already started when Unsubscribe was
// called (or whose stage had passed that last check, the call not yet
// made) may still be running when it returns; it is the last. A producer waiting for room is released by it.
// Synchronous sources check for it before every value, so Take over an
// endless synchronous source terminates.
//
// First and Collect wire their context to the subscription before
// subscribing: when the context ends they return its error promptly (Collect
// with no values: nil) and the source is unsubscribed, also while the source
// is still running inside Subscribe (a Create producer looping on the
// caller's goroutine sees its own context end). OnError(nil) is never
// success: it becomes ErrNilError. A panic out of a plain Subscribe (a
// user function, or a clock, over a source delivering inside Subscribe)
// leaves the caller no Subscription: the chain releases itself (timers,
// inner subscriptions, cleanups) as the panic leaves, and delivers
// nothing more. A clock that calls a timer's function back from inside
// its arming has that call run, once arming has returned, on a goroutine
// of its own, as a real timer's is.
//
// A nil function, clock or observer passed to any function of this package
// is a programming error: it panics at that call with a message naming the
// argument ("rx.Timeout: nil clock", "rx.Map.Subscribe: nil observer"),
// never later as a nil dereference inside a delivery. A nil source (an
// observable argument, or one in a list of sources) is an input the caller
// may get from data, a lookup that found nothing: the stream the function
// returns fails at subscription with an *ArgumentError naming the function
// and the argument ("rx.Map: src = <nil> must be an observable"), and First,
// Collect, All and ToChannel answer with it; OnErrorResumeNext skips a nil
// source as it skips a failing one.
//
// Subjects keep no subscriber that has ended, also one that ends during its
// own replay; ReplaySubject and BehaviorSubject never record a value that
// reaches them after their terminal notification, and replay inside
// Subscribe even when called from inside one of their own notifications, so
// First on them there returns the current value.
//
// # Go iteration
//
// All ranges over a stream with a for loop, under a context; FromSeq turns an
// iter.Seq into a stream. A live mesh query reads so:
//
//	for c, err := range rx.All(ctx, store.Query(q)) {
//		if err != nil {
//			return err // the query failed, or ctx ended (ctx.Err())
//		}
//		apply(c) // the Initial frame, then Added/Updated/Removed
//	}
//
// The loop body always runs on the ranging goroutine, and a slow loop slows
// its source. Breaking out of the loop (or returning, or panicking)
// unsubscribes the source; an error ends the loop after yielding (zero, err)
// once; completion ends it. All subscribes on the ranging goroutine and
// starts no goroutine: a value delivered there (inside Subscribe, or by a
// subject the loop body feeds) runs the body inside the source's own loop,
// with no goroutine hop, its OnNext returning once the body has handled it
// (over Of or Range and stages that keep the type, the body is the
// last step of their fused loop: per value, the stages' functions, one call
// into All and one into the body; All's doc gives the cost of each path);
// values delivered from another goroutine are handed over through a queue of
// 64, which the ranging goroutine takes in one batch (a goroutine switch per
// batch, at most 128 values between producer and body). A loop body that
// pushes follow-up work into the subject it ranges over is a work queue of
// any size.
//
// # Operators
//
// Operators are free functions, because Go methods cannot add type
// parameters: rx.Map(src, f), rx.SelectMany(src, f), rx.Timeout(src, due, clk).
// SelectMany merges its inners as Rx.NET does; ConcatMap runs them one after
// the other. Retry resubscribes; Catch continues with another stream; Share
// multicasts one subscription to many subscribers.
//
// Answers about a stream (each ends it with one value, or an error; those
// that can answer early unsubscribe their source at once): Last,
// ElementAt, Single, Find, Contains, Every, IsEmpty, SequenceEqual, Min,
// Max, Sum, Average, ToMap. Shapes of a stream: IgnoreElements, Pairwise,
// SkipLast, SkipUntil, DistinctBy, Materialize, Dematerialize,
// Timestamp, TimeInterval. Ending and restarting: ThrowIfEmpty,
// OnErrorReturn, OnErrorResumeNext, Repeat, Using, DelaySubscription.
// ToChannel hands a stream to channel code under a context. Where Rx.NET
// and RxJS differ (Find, Min and Max on an empty stream, Repeat with a
// count <= 0, ...), each doc comment says which it follows. A stream that
// lacks the shape such an operator needs fails with a typed error
// (*SequenceError wrapping ErrEmpty or ErrMoreThanOne, *IndexError,
// *DuplicateKeyError, *ArithmeticOverflowError), never a panic; the
// buffering ones say their bound (SkipLast holds n values, SequenceEqual at
// most ZipLimit, ToChannel its channel's size).
//
// Higher-order and multi-source operators: GroupBy splits a stream into
// keyed groups; Window, WindowCount and WindowTime into windows (as
// observables, closed by a boundary stream's values, every n values or
// every period: the last two are the counterparts of BufferCount and
// BufferTime); MergeAll, ConcatAll and Switch flatten a stream of streams; SelectManyLimit bounds
// how many inners SelectMany runs at once; Expand applies a selector
// recursively; CombineLatest, Zip and ForkJoin combine N sources of one
// type into slices; WithLatestFrom pairs each value with another stream's
// latest; Race mirrors the first source to notify; Sample emits the latest
// value per period; RetryWhen resubscribes when a notifier says so;
// ShareReplay multicasts with a replay of the last n values. Those that
// hold values say how many: GroupBy at most GroupLimit groups (a group
// holds none), ConcatMap, ConcatAll, SelectManyLimit, Expand and Delay at
// most QueueLimit waiting values (a producer on another goroutine beyond
// that waits for room, except Expand's), Zip at most ZipLimit values per
// source ahead,
// ShareReplay n values, WithLatestFrom and Sample one; beyond a bound the
// stream fails with an *OverflowError. Each doc comment names the
// reference (Rx.NET or RxJS) it follows where the two differ.
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
// rxtest.Drive runs a consumer written as a for loop over All (or First,
// Collect) in virtual time, step by step and the same on every run: the
// recipe is in `go doc ./rx/rxtest` and docs/rx-testing.md.
//
// # Conformance
//
// Every exported function of this package has an entry in one conformance
// table (conformance_test.go) run against the same adversarial schedule:
// the grammar under concurrent termination, nothing after Unsubscribe
// returned (from another goroutine, inside a user function or the
// observer, by a timer at the same instant), an Unsubscribe inside the
// terminal notification (no deadlock, nothing left), panicking user
// functions (which lose their value, not the stream), nothing left
// subscribed or armed once a subscription whose observer panicked has ended
// (also by a panic in its terminal notification, with no Unsubscribe),
// re-entrant calls (from the observer or a user function), the memory a
// blocked consumer lets producers use, goroutines left behind, contexts
// honoured by All, First and Collect, and nil arguments.
// A function missing from the table fails the build's tests. A second
// table (conformance_bounds_test.go) classifies every function by what
// bounds the values it holds (nothing, transit, a constant, a count the
// caller passes, its result, a duration, or a named limit) and measures the
// named limits with a producer racing ahead of a blocked consumer; a
// function missing from it fails too.
//
// # Examples
//
// ExampleAll, ExampleSwitchMap, ExampleDebounce, ExampleMap, ExampleSelectMany, ExampleTimeout, ExampleTimeoutStage and ExampleAsyncSubject (example_ops_test.go, example_test.go) are worked examples,
// compiled by go test; so are ExampleGroupBy, ExampleSelectManyLimit and
// ExampleZip (example_ops2_test.go). go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./rx/.
// ExampleSequenceEqual, ExampleSingle, ExampleToChannel, ExampleUsing and
// ExampleMaterialize (example_ops1_test.go) show the operators of the same
// names.
package rx
