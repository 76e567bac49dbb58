package rxgoadapt_test

import (
	"context"
	"fmt"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxgoadapt"
	"github.com/reactivex/rxgo/v2"
)

func Example() {
	ctx := context.Background()

	// rxgo to rx: a typed stream; an item of another type would end it
	// with a *rxgoadapt.TypeError.
	evens := rx.Filter(rxgoadapt.FromRxGoOf[int](rxgo.Just(1, 2, 3, 4)()), func(n int) bool { return n%2 == 0 })
	vs, err := rx.Collect(ctx, evens)
	fmt.Println(vs, err)

	// rx to rxgo: each Observe is one subscription, ended when ctx is done.
	squares := rx.Map(rx.Range(1, 3), func(n int) int { return n * n })
	for item := range rxgoadapt.ToRxGo(squares).Observe(rxgo.WithContext(ctx)) {
		fmt.Println(item.V, item.E)
	}
	// Output:
	// [2 4] <nil>
	// 1 <nil>
	// 4 <nil>
	// 9 <nil>
}
