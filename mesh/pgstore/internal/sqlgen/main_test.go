package sqlgen

import (
	"testing"

	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
)

// pg is the PostgreSQL server this package's tests share; each test that
// needs one gets a database of its own on it.
var pg pgtest.Harness

func TestMain(m *testing.M) { pgtest.Main(m, &pg) }
