// Package rxgoadapt connects rx streams to github.com/reactivex/rxgo/v2
// observables, in both directions, without breaking either side's contract.
//
// FromRxGo and FromRxGoOf read an rxgo observable as an rx stream. Each
// subscription observes the rxgo side afresh under its own context and
// cancels that context when the subscription ends, so unsubscribing stops
// the rxgo pipeline. rxgo's error items become OnError and end the stream,
// even where rxgo would carry on after them (rxgo.ContinueOnError), so the
// rx grammar holds. FromRxGoOf checks each item's type and ends the stream
// with a *TypeError, never a panic, when one does not fit. Once a
// subscription has ended, whatever rxgo still sends is drained in the
// background for at most a drain budget (WithDrainBudget), so rxgo
// goroutines that send without watching their context can exit; a source
// still open when the budget runs out is abandoned with a warning.
//
// ToRxGo turns an rx stream into a cold rxgo observable: every Observe
// subscribes to the rx stream once, and the subscription is ended when the
// consumer's context (rxgo.WithContext) is done, so a consumer that stops
// reading and cancels its context leaves nothing running. As with every rxgo
// source, a consumer that stops reading without cancelling its context holds
// the producing goroutine until it does.
//
// rxgo observables built with rxgo.Create, rxgo.FromChannel, rxgo.Interval,
// rxgo.Thrown or rxgo.Retry are shared and single-shot: a second subscription
// through FromRxGo sees whatever the first one left. Those returned by the
// rxgo operators FlatMap, Debounce, Join, TimeInterval and the time-based
// Buffer and Window operators make their output channel once, so a second
// subscription makes rxgo send on a closed channel and panic. Use rxgo.Defer,
// and build such operators inside it, when the rx side may subscribe more
// than once (rx.Retry, rx.Share reconnecting).
//
// # Examples
//
// Example (example_test.go) is a worked example,
// compiled by go test. go doc does not print examples: read them in the file,
// on pkgsite, or run them with go test -run Example ./rx/rxgoadapt/.
package rxgoadapt
