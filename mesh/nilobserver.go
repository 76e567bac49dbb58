package mesh

import "github.com/meshrx/meshrx/rx"

// observerRequired is a live query that refuses a nil observer at
// Subscribe, before anything is registered: without it, Subscribe(nil)
// registered the query with the store, then failed on a nil dereference
// delivering the Initial, and left the query live for the store's life.
type observerRequired struct {
	rx.Observable[Change]
	query string
}

func (q observerRequired) Subscribe(o rx.Observer[Change]) rx.Subscription {
	if o == nil {
		panic("mesh: Subscribe(nil) on the query " + quoteClipped(q.query, 120) +
			": the observer is nil; pass one, e.g. rx.NewObserver(onFrame, onError, onDone), or read with rx.All")
	}
	return q.Observable.Subscribe(o)
}
