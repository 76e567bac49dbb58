package auth

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
)

// pg is the PostgreSQL server of the tests that run on pgstore (replicas,
// the permission-check benchmark); it starts only when one asks for it.
var pg pgtest.Harness

func TestMain(m *testing.M) { goleak.VerifyTestMain(pg.Wrap(m)) }
