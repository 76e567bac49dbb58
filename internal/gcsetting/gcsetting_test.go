package gcsetting

import (
	"flag"
	"math"
	"runtime/debug"
	"strconv"
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
	s = Setting{MemoryLimitMiB: -1}
	assert.ErrorContains(t, s.Validate(), "must not be negative", "a negative limit is refused")
}

// A limit whose byte count does not fit an int64 is refused with an error
// naming the flag, as parsed from the command line, before anything is
// applied: 2^43, 2^44 and 2^44+1 MiB would otherwise set MinInt64 (no
// limit set), 0 bytes and 1 MiB. The largest that fits is
// accepted. Control: each refused value, shifted as Apply shifts it, gives
// the wrapped byte count (so without the check it would be applied).
func TestAMemoryLimitWhoseByteCountOverflowsIsRefused(t *testing.T) {
	wrapped := map[int64]int64{1 << 43: math.MinInt64, 1 << 44: 0, 1<<44 + 1: 1 << 20, math.MaxInt64: -1 << 20}
	for mib, bytes := range wrapped {
		var s Setting
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		s.Register(fs)
		require.NoError(t, fs.Parse([]string{"-memory-limit-mib", strconv.FormatInt(mib, 10)}))
		err := s.Validate()
		require.Error(t, err, "%d MiB", mib)
		assert.Contains(t, err.Error(), "-memory-limit-mib")
		assert.Contains(t, err.Error(), "too large")
		// Control: the shift Apply would do wraps this value.
		assert.Equal(t, bytes, s.MemoryLimitMiB<<20, "control: %d MiB wraps", mib)
	}
	ok := Setting{MemoryLimitMiB: MaxMemoryLimitMiB}
	require.NoError(t, ok.Validate(), "the largest limit that fits is accepted")
	assert.Positive(t, ok.MemoryLimitMiB<<20, "and its byte count does not wrap")
	assert.Error(t, Setting{MemoryLimitMiB: MaxMemoryLimitMiB + 1}.Validate(), "one more is refused")
}
