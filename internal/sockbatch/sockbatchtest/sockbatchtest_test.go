package sockbatchtest

import (
	"errors"
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a testing.TB that records what a test would have done.
type recorder struct {
	testing.TB
	failed, otherwise string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// Where io_uring is unavailable a test fails when MESHRX_REQUIRE_IOURING=1
// and otherwise skips (or logs) saying why. Negative control: with
// unavailable ignoring required, the required case records no failure and
// this test fails, as it did when run so.
func TestUnavailableIOUringFailsTheTestOnlyWhenRequired(t *testing.T) {
	refused := fmt.Errorf("sockbatch: io_uring_setup: operation not permitted (%w)", errors.ErrUnsupported)
	for _, required := range []bool{true, false} {
		r := &recorder{TB: t}
		unavailable(r, refused, required, func(format string, args ...any) { r.otherwise = fmt.Sprintf(format, args...) })
		if required {
			if r.failed == "" || r.otherwise != "" {
				t.Errorf("required: failed %q, skipped %q; want a failure only", r.failed, r.otherwise)
			}
		} else if r.failed != "" || r.otherwise == "" {
			t.Errorf("not required: failed %q, skipped %q; want a skip only", r.failed, r.otherwise)
		}
	}
}

// On this project's CI kernel io_uring works: with MESHRX_REQUIRE_IOURING=1
// (as .ci/run sets it) this fails where it does not.
func TestIOUringIsAvailableWhereItIsRequired(t *testing.T) {
	Require(t)
}
