package rx_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// RxJS pairwise's marble ('--a--b--c--d--|' → '-----x--y--z--|', x = [a, b],
// y = [b, c], z = [c, d]) in virtual time: a pair at each value from the
// second on, nothing for a single value. Negative control: not updating
// prev after a pair gave [a, b], [a, c], [a, d].
func TestPairwiseEmitsEachValueWithTheOneBeforeIt(t *testing.T) {
	clk := rxtest.NewClock()
	xs := rxtest.Hot(clk, rxtest.Next(ms(220), "a"), rxtest.Next(ms(250), "b"), rxtest.Next(ms(280), "c"),
		rxtest.Next(ms(310), "d"), rxtest.Completed[string](ms(340)))
	res := rxtest.Start(clk, ms(200), ms(1000), func() rx.Observable[[2]string] { return rx.Pairwise[string](xs) })
	assert.Equal(t, []rxtest.Event[[2]string]{
		rxtest.Next(ms(250), [2]string{"a", "b"}), rxtest.Next(ms(280), [2]string{"b", "c"}),
		rxtest.Next(ms(310), [2]string{"c", "d"}), rxtest.Completed[[2]string](ms(340)),
	}, res.Events())

	vs, err := collect(t, rx.Pairwise(rx.Return(1)))
	assert.NoError(t, err)
	assert.Empty(t, vs)
}
