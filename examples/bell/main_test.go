package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
)

// pg is the PostgreSQL server the -pg and -measure tests share; each test
// gets a database of its own on it.
var pg pgtest.Harness

func TestMain(m *testing.M) { goleak.VerifyTestMain(pg.Wrap(m)) }
