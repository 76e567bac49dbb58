package rx

// ToMap collects src into a map, keyed and valued as project returns them
// for each value, and emits it once src completes (Rx.NET's
// ToDictionary(keySelector, elementSelector)). A key returned twice fails
// the stream at once with a *DuplicateKeyError and unsubscribes src, as
// Rx.NET's ToDictionary does: the map never silently loses a value. Like
// Collect it holds one entry per value until completion, so use it on
// streams whose length is bounded (Take, TakeUntil or a Timeout bound an
// open one); the map is the subscriber's once emitted.
//
// A key holding a dynamic type == cannot compare (K an interface) fails the
// stream with an *UncomparableError.
func ToMap[T any, K comparable, V any](src Observable[T], project func(T) (K, V)) Observable[map[K]V] {
	mustArg(project == nil, "ToMap", "function project")
	if src == nil {
		return nilSource[map[K]V]("ToMap", "src")
	}
	check := mayHoldUncomparable[K]()
	return observableFunc[map[K]V](func(down Observer[map[K]V]) Subscription {
		m := &toMapObserver[T, K, V]{project: project, m: map[K]V{}, check: check}
		return startVerdict[T, map[K]V](&m.verdict, down, src, m)
	})
}

type toMapObserver[T any, K comparable, V any] struct {
	verdict[map[K]V]
	project func(T) (K, V)
	m       map[K]V
	check   bool // K may hold keys == cannot compare: see mayHoldUncomparable
}

func (t *toMapObserver[T, K, V]) OnNext(v T) {
	if t.over() {
		return
	}
	k, x := t.project(v)
	if t.sc.cancelled() {
		return
	}
	if t.check {
		if err := uncomparable("ToMap", "key", k); err != nil {
			t.m = nil
			t.fail(err)
			return
		}
	}
	if _, dup := t.m[k]; dup {
		t.m = nil
		t.fail(&DuplicateKeyError{Op: "ToMap", Key: k})
		return
	}
	t.m[k] = x
}
func (t *toMapObserver[T, K, V]) OnError(err error) { t.m = nil; t.fail(err) }
func (t *toMapObserver[T, K, V]) OnCompleted() {
	m := t.m
	t.m = nil
	t.answer(m)
}
func (t *toMapObserver[T, K, V]) rxScope() *scope { return &t.up }
