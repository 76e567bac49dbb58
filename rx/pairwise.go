package rx

// Pairwise emits each value with the one before it, as [previous, current],
// from src's second value on (RxJS's pairwise(); Rx.NET spells it
// Buffer(2, 1) without the final single). It holds one value.
func Pairwise[T any](src Observable[T]) Observable[[2]T] {
	if src == nil {
		return nilSource[[2]T]("Pairwise", "src")
	}
	return observableFunc[[2]T](func(down Observer[[2]T]) Subscription {
		sc := scopeOf(down)
		return subscribe[T](src, &pairwiseObserver[T]{down: direct(down), sc: sc}, sc)
	})
}

type pairwiseObserver[T any] struct {
	down Observer[[2]T]
	prev T
	has  bool
	sc   *scope
}

func (p *pairwiseObserver[T]) OnNext(v T) {
	if !p.has {
		p.prev, p.has = v, true
		return
	}
	pair := [2]T{p.prev, v}
	p.prev = v
	p.down.OnNext(pair)
}
func (p *pairwiseObserver[T]) OnError(err error) { p.down.OnError(err) }
func (p *pairwiseObserver[T]) OnCompleted()      { p.down.OnCompleted() }
func (p *pairwiseObserver[T]) rxScope() *scope   { return p.sc }
