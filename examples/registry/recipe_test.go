package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/registry/client"
)

// recipe returns the argument lists of the README's "Replicas"
// section commands (`go run ./examples/registry …`), in order.
func recipe(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(data), "## Replicas")
	require.True(t, ok, "README has its Replicas section")
	section, _, _ = strings.Cut(section, "\n## ")
	var runs [][]string
	for line := range strings.SplitSeq(section, "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		fields := strings.Fields(cmd)
		if len(fields) > 3 && fields[0] == "go" && fields[1] == "run" && fields[2] == "./examples/registry" {
			runs = append(runs, fields[3:])
		}
	}
	return runs
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// localised is args with the recipe's database, directory and addresses
// replaced by the test's: the same value in two commands gets the same
// replacement, so that two commands that share a port in the README share
// one here.
func localised(t *testing.T, args []string, subst map[string]string) []string {
	t.Helper()
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if i == 0 || !strings.HasPrefix(args[i-1], "-") {
			continue
		}
		switch args[i-1] {
		case "-addr", "-metrics-addr":
			if _, ok := subst[a]; !ok {
				subst[a] = freeAddr(t)
			}
		}
		if r, ok := subst[a]; ok {
			out[i] = r
		}
	}
	return out
}

// replica is one run of the example for the recipe test.
type replica struct {
	url, key string
	done     chan error
}

// launch runs the example with args until the test ends; it returns once
// the example listens, or with the error it stopped with.
func launch(t *testing.T, args []string, h hooks) (*replica, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	r := &replica{done: make(chan error, 1)}
	go func() {
		err := run(ctx, args, w, io.Discard, h)
		_ = w.CloseWithError(io.EOF)
		r.done <- err
	}()
	stopped := false
	t.Cleanup(func() {
		cancel()
		if stopped {
			return
		}
		select {
		case err := <-r.done:
			assert.NoError(t, err, "the replica's shutdown")
		case <-time.After(bound):
			t.Error("the replica did not shut down within the bound")
		}
	})
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	deadline := time.After(3 * bound)
	for r.url == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				stopped = true
				return nil, <-r.done
			}
			if k, ok := strings.CutPrefix(line, "demo instance key: "); ok {
				r.key = k
			}
			if u, ok := strings.CutPrefix(line, "listening on "); ok {
				r.url = u
			}
		case <-deadline:
			require.FailNow(t, "the replica did not listen within the bound")
		}
	}
	go func() {
		for range lines {
		}
	}()
	return r, nil
}

// TestTheReadmesTwoReplicaRecipeRunsAsWrittenOnOneMachine: the README's
// two commands, with its database, directory and ports replaced by the
// test's (the same value kept the same), start two replicas that print one
// demo key and serve it the same index. Negative control: the second
// command without its -metrics-addr (as the README had it) stops with an
// error that names the flag, since both would take the default.
func TestTheReadmesTwoReplicaRecipeRunsAsWrittenOnOneMachine(t *testing.T) {
	runs := recipe(t)
	require.Len(t, runs, 2, "the README shows a first replica and a second")
	dbURL := pg.Database(t)
	h := hooks{metricsDefault: freeAddr(t)}
	subst := map[string]string{"postgres://localhost/meshrx": dbURL, "/srv/meshrx-modules": t.TempDir()}
	first, err := launch(t, localised(t, runs[0], subst), h)
	require.NoError(t, err)

	// Control first, while the first replica holds the default.
	var withoutFlag []string
	for i := 0; i < len(runs[1]); i++ {
		if runs[1][i] == "-metrics-addr" {
			i++
			continue
		}
		withoutFlag = append(withoutFlag, runs[1][i])
	}
	require.Less(t, len(withoutFlag), len(runs[1]), "the second command gives its own -metrics-addr")
	_, err = launch(t, localised(t, withoutFlag, subst), h)
	require.Error(t, err, "control: two replicas on the default metrics address collide")
	assert.Contains(t, err.Error(), "-metrics-addr", "the error names the flag")

	second, err := launch(t, localised(t, runs[1], subst), h)
	require.NoError(t, err)
	assert.Equal(t, first.key, second.key, "both replicas print the key that works")
	c := &http.Client{Timeout: bound}
	var bodies []client.Index
	for _, r := range []*replica{first, second} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, r.url+client.IndexPath, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+first.key)
		resp, err := c.Do(req)
		require.NoError(t, err)
		var idx client.Index
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&idx))
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode)
		bodies = append(bodies, idx)
	}
	assert.Len(t, bodies[0].Bundles, len(demoPackages()))
	assert.Equal(t, bodies[0].Bundles, bodies[1].Bundles, "the replicas serve one index")
	c.CloseIdleConnections()
}
