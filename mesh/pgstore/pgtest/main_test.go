package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// pg is this package's shared server for the tests that need any server.
var pg Harness

// helperEnv makes the test binary act as a child process for the tests that
// need one (see runHelper) instead of running tests.
const helperEnv = "MESHRX_PGTEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	goleak.VerifyTestMain(pg.Wrap(m))
}

// runHelper is the child side of the tests that need a second process:
//
//	exit   exits at once (its pid is then a dead owner)
//	hang   waits until stdin closes
//	serve  starts a local server under $MESHRX_PGTEST_HELPER_TMP, prints
//	       "<url>\n<dir>\n", then waits until stdin closes and stops it
func runHelper(mode string) int {
	switch mode {
	case "exit":
		return 0
	case "hang":
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "serve":
		s, err := Config{TempDir: os.Getenv(helperEnv + "_TMP")}.Start(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		w := bufio.NewWriter(os.Stdout)
		fmt.Fprintf(w, "%s\n%s\n", s.URL(), s.Dir())
		_ = w.Flush()
		_, _ = io.Copy(io.Discard, os.Stdin)
		if err := s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown %s mode %q\n", helperEnv, mode)
	return 2
}
