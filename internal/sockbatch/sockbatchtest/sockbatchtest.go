// Package sockbatchtest tells tests whether io_uring works here, so that a
// test of the io_uring path skips where it cannot run (a kernel without
// io_uring, or io_uring_setup refused by a seccomp filter or the
// kernel.io_uring_disabled sysctl) — or fails there when
// MESHRX_REQUIRE_IOURING=1, as CI sets it: CI runs on a kernel where
// io_uring works, so its io_uring tests cannot pass by skipping.
package sockbatchtest

import (
	"os"
	"testing"

	"github.com/meshrx/meshrx/internal/sockbatch"
)

// EnvRequire, when "1", turns io_uring being unavailable from a skip (or a
// note in the log) into a test failure.
const EnvRequire = "MESHRX_REQUIRE_IOURING"

// Available reports whether a ring can be set up here. Where it cannot, it
// fails t when MESHRX_REQUIRE_IOURING=1, and otherwise logs why (the test
// then runs what it runs without io_uring: the callers' fallback).
func Available(t testing.TB) bool {
	t.Helper()
	err := setUp()
	if err == nil {
		return true
	}
	unavailable(t, err, os.Getenv(EnvRequire) == "1", t.Logf)
	return false
}

// Require skips t where io_uring is unavailable, or fails it there when
// MESHRX_REQUIRE_IOURING=1.
func Require(t testing.TB) {
	t.Helper()
	if err := setUp(); err != nil {
		unavailable(t, err, os.Getenv(EnvRequire) == "1", t.Skipf)
	}
}

// setUp sets up a ring of one entry and closes it.
func setUp() error {
	r, err := sockbatch.New(1, sockbatch.Options{})
	if err != nil {
		return err
	}
	return r.Close()
}

// unavailable fails t when required, and otherwise reports err with
// otherwise (t.Logf or t.Skipf).
func unavailable(t testing.TB, err error, required bool, otherwise func(string, ...any)) {
	t.Helper()
	if required {
		t.Fatalf("io_uring is unavailable here and %s=1 requires it: %v", EnvRequire, err)
		return
	}
	otherwise("io_uring is unavailable here (%v); set %s=1 to fail instead", err, EnvRequire)
}
