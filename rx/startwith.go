package rx

// StartWith emits vs, then the values of src.
func StartWith[T any](src Observable[T], vs ...T) Observable[T] {
	if src == nil {
		return nilSource[T]("StartWith", "src")
	}
	if len(vs) == 0 {
		return src
	}
	return Concat(Of(vs...), src)
}
