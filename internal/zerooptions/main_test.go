package zerooptions_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
)

// pg is the PostgreSQL server of the pgstore row; it starts only when that
// row asks for it.
var pg pgtest.Harness

func TestMain(m *testing.M) { goleak.VerifyTestMain(pg.Wrap(m)) }
