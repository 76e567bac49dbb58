package gcsetting

import (
	"flag"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// current reads the collector's settings without changing them.
func current() (gogc int, limit int64) {
	gogc = debug.SetGCPercent(-1)
	debug.SetGCPercent(gogc)
	return gogc, debug.SetMemoryLimit(-1) // a negative limit only reads it
}

// The flags set the collector while the program runs and put back what was
// there; without them nothing changes. Control: the same flags parsed,
// checked while applied, then after restore: the values differ while
// applied (so the before/after equality is not vacuous).
func TestTheFlagsSetTheCollectorUntilRestoredAndUnsetTheyChangeNothing(t *testing.T) {
	gogc, limit := current()

	var unset Setting
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	unset.Register(fs)
	require.NoError(t, fs.Parse(nil))
	require.NoError(t, unset.Validate())
	restore := unset.Apply()
	g, l := current()
	assert.Equal(t, [2]int64{int64(gogc), limit}, [2]int64{int64(g), l}, "no flag: the collector as it was")
	restore()

	var s Setting
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	s.Register(fs)
	require.NoError(t, fs.Parse([]string{"-gogc", "437", "-memory-limit-mib", "3000"}))
	require.NoError(t, s.Validate())
	restore = s.Apply()
	g, l = current()
	restore()
	assert.Equal(t, 437, g)
	assert.Equal(t, int64(3000)<<20, l)
	g2, l2 := current()
	assert.Equal(t, [2]int64{int64(gogc), limit}, [2]int64{int64(g2), l2}, "restored")

	s = Setting{GOGC: -1}
	assert.Error(t, s.Validate(), "GOGC off is refused")
}
