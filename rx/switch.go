package rx

// Switch mirrors the latest observable src has emitted: when src emits
// another, the previous one is unsubscribed. It follows Rx.NET's Switch,
// which RxJS's switchAll matches: it completes when src and the latest
// inner have completed, and any error ends the stream. It is SwitchMap with
// the identity selector and holds no values.
func Switch[T any](src Observable[Observable[T]]) Observable[T] {
	if src == nil {
		return nilSource[T]("Switch", "src")
	}
	return SwitchMap(src, sameObservable[Observable[T]])
}
