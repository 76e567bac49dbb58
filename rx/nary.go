package rx

// nary is the shared state of an operator over N sources of one type
// (CombineLatest, Zip, ForkJoin): their notifications, tagged with the
// source's index, go through one mailbox, so the operator's handler sees
// one at a time and holds no lock while it delivers. A producer waiting for
// room is released when its source's stage or the operator's work ends.
type nary[T any] struct {
	sc   *scope
	work scope
	mb   mailbox[naryNote[T]]
	ins  []naryIn[T]
}

type naryNote[T any] struct {
	note[T]
	i int
}

// start subscribes the sources in order, stopping when the operator has
// already ended (a synchronous source may end it inside Subscribe).
func (n *nary[T]) start(srcs []Observable[T], h mailboxHandler[naryNote[T]]) {
	n.mb.h = h
	n.sc.initChild(&n.work)
	n.ins = make([]naryIn[T], len(srcs))
	for i := range n.ins {
		n.ins[i].n, n.ins[i].i = n, i
		n.work.initChild(&n.ins[i].sc)
	}
	for i, src := range srcs {
		if n.work.cancelled() {
			return
		}
		subscribeIn[T](src, &n.ins[i], &n.ins[i].sc)
	}
}

// end closes the mailbox and ends every source.
func (n *nary[T]) end() {
	n.mb.close()
	n.work.cancel()
}

type naryIn[T any] struct {
	n  *nary[T]
	i  int
	sc scope
}

func (in *naryIn[T]) OnNext(v T) {
	in.n.mb.post(naryNote[T]{note: note[T]{kind: kindNext, v: v}, i: in.i}, &in.sc)
}
func (in *naryIn[T]) OnError(err error) {
	in.n.mb.postEnd(naryNote[T]{note: note[T]{kind: kindError, err: err}, i: in.i})
}
func (in *naryIn[T]) OnCompleted() {
	in.sc.cancel()
	in.n.mb.postEnd(naryNote[T]{note: note[T]{kind: kindCompleted}, i: in.i})
}
func (in *naryIn[T]) rxScope() *scope { return &in.sc }
