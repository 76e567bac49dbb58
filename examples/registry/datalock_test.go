//go:build unix

package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On the embedded store a -data directory is one process's: a second
// start on it would overwrite the first's demo-instance-key with a key
// only the second's in-process store holds, and the bundles either lands
// would reach the other with no package node, served to nobody. It is
// refused naming -data; once the first has stopped, the directory is free.
// Negative control: without lockData, the second start serves (run does
// not return before its 5 s context ends, and returns nil).
func TestASecondEmbeddedStoreRegistryOnADataDirectoryInUseIsRefusedNamingData(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-addr", "127.0.0.1:0", "-metrics-addr", "", "-data", dir}

	stop := listening(t, args)
	second, cancelSecond := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancelSecond()
	err := run(second, args, io.Discard, io.Discard, hooks{})
	if assert.Error(t, err) {
		assert.Regexp(t, `-data.*in use`, err.Error())
	}
	assert.NoError(t, second.Err(), "refused at once, not after serving")

	require.NoError(t, stop())
	require.NoError(t, listening(t, args)(), "the directory is free once the first has stopped")
}

// listening runs the registry with args until it prints its address, and
// returns what stops it and says how its run ended.
func listening(t *testing.T, args []string) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, w, io.Discard, hooks{})
		_ = w.Close()
		done <- err
	}()
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "listening on ") {
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	require.NoError(t, ctx.Err(), "the registry did not start within the bound")
	return func() error {
		cancel()
		return <-done // bounded: run shuts down within shutdownBudget
	}
}
