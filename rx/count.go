package rx

// Count emits how many values src emitted, once it completes.
func Count[T any](src Observable[T]) Observable[int] {
	if src == nil {
		return nilSource[int]("Count", "src")
	}
	return Reduce(src, 0, func(n int, _ T) int { return n + 1 })
}
