package scalar

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNumbersAreDecimalsIntegersKeepTheirPrecision(t *testing.T) {
	for s, ok := range map[string]bool{"42": true, "-3.5": true, "+1e9": true, ".5": true, "1e": false, "Inf": false, "NaN": false, "0x10": false, "": false, "1 ": false} {
		_, got := ParseNumber(s)
		assert.Equal(t, ok, got, s)
	}
	big, _ := ParseNumber("9007199254740993")
	bigger, _ := ParseNumber("9007199254740992")
	assert.Equal(t, 1, big.Compare(bigger), "int64 precision beyond float64")
	huge, ok := ParseNumber("1e400")
	assert.True(t, ok)
	assert.True(t, math.IsInf(huge.Float, 1))
	half, _ := ParseNumber("0.5")
	one, _ := ParseNumber("1")
	assert.Equal(t, -1, half.Compare(one))
}

func TestTimesAreRFC3339OrDates(t *testing.T) {
	d, ok := ParseTime("2026-01-02")
	assert.True(t, ok)
	assert.Equal(t, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), d)
	_, ok = ParseTime("2026-01-02T03:04:05.123Z")
	assert.True(t, ok)
	for _, s := range []string{"soon", "2026-1-2", "20260102", "2026-01-02 03:04"} {
		_, ok := ParseTime(s)
		assert.False(t, ok, s)
	}
}
