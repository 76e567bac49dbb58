package pgtest

import (
	"errors"
	"fmt"
	"strconv"
)

// Environment variables that steer where tests get PostgreSQL from.
const (
	// EnvURL names an existing server to use instead of starting one. Each test
	// gets its own database there, dropped when the test ends.
	EnvURL = "MESHRX_PG_URL"
	// EnvRequire, when true ("1"), turns "no PostgreSQL here" from a skip into
	// a failure, so CI cannot pass by silently skipping every database test.
	EnvRequire = "MESHRX_REQUIRE_PG"
)

// Mode is where a test binary's PostgreSQL server comes from.
type Mode int

const (
	ModeExternal Mode = iota + 1 // EnvURL names a server
	ModeLocal                    // server programs were found: start a throwaway server
	ModeSkip                     // no server: tests that need one skip
	ModeFail                     // no server although one is required, or the settings are invalid
)

func (m Mode) String() string {
	switch m {
	case ModeExternal:
		return "external"
	case ModeLocal:
		return "local"
	case ModeSkip:
		return "skip"
	case ModeFail:
		return "fail"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Plan is the decision a test binary makes once: which server to use, or why
// there is none (the text a skipped or failed test shows).
type Plan struct {
	Mode     Mode
	URL      string   // ModeExternal: the server's URL
	Binaries Binaries // ModeLocal: the programs to start it with
	Reason   string   // ModeSkip, ModeFail: why there is no server, and what to do
}

// Decide makes the plan from the environment (getenv is os.Getenv outside
// tests) and the outcome of FindBinaries. It does no I/O.
func Decide(getenv func(string) string, bins Binaries, findErr error) Plan {
	require, err := parseRequire(getenv(EnvRequire))
	if err != nil {
		// A misspelt switch must not quietly mean "off": say so, whatever else holds.
		return Plan{Mode: ModeFail, Reason: err.Error()}
	}
	if url := getenv(EnvURL); url != "" {
		return Plan{Mode: ModeExternal, URL: url}
	}
	if findErr == nil {
		return Plan{Mode: ModeLocal, Binaries: bins}
	}
	var nf *NotFoundError
	if !errors.As(findErr, &nf) {
		// Discovery itself failed in an unexpected way: that is a fault, not absence.
		return Plan{Mode: ModeFail, Reason: findErr.Error()}
	}
	if require {
		return Plan{Mode: ModeFail, Reason: fmt.Sprintf("%v (failing, not skipping, because %s=%s)", findErr, EnvRequire, getenv(EnvRequire))}
	}
	return Plan{Mode: ModeSkip, Reason: fmt.Sprintf("%v (skipping; set %s=1 to make this a failure)", findErr, EnvRequire)}
}

func parseRequire(v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("pgtest: %s=%q is not a boolean; use 1 to require PostgreSQL or 0 to allow skipping", EnvRequire, v)
	}
	return b, nil
}
