package pgtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// helperProcess starts the test binary as a child in the given helper mode.
func helperProcess(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	return cmd
}

func TestTheReaperRemovesOnlyDirectoriesWhoseTestBinaryIsGone(t *testing.T) {
	// A process that has exited: its pid owns nothing any more.
	gone := helperProcess(t, "exit")
	require.NoError(t, gone.Run())
	deadPID := gone.Process.Pid

	// A live process that is not a postgres server, named in a stale
	// directory's postmaster.pid: the reaper must not signal it.
	bystander := helperProcess(t, "hang")
	stdin, err := bystander.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, bystander.Start())
	bystanderDone := false
	t.Cleanup(func() {
		if !bystanderDone {
			_ = stdin.Close()
			_ = bystander.Wait()
		}
	})

	parent := t.TempDir()
	mk := func(name string) string {
		dir := filepath.Join(parent, name)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
		return dir
	}
	stale := mk(dirPrefix + strconv.Itoa(deadPID) + "-abc")
	require.NoError(t, os.WriteFile(filepath.Join(stale, "data", "postmaster.pid"),
		[]byte(strconv.Itoa(bystander.Process.Pid)+"\n"+filepath.Join(stale, "data")+"\n"), 0o644))
	mine := mk(dirPrefix + strconv.Itoa(os.Getpid()) + "-def")
	unrelated := mk("meshrx-other-" + strconv.Itoa(deadPID))
	noPID := mk(dirPrefix + "notapid-ghi")
	staleFile := filepath.Join(parent, dirPrefix+strconv.Itoa(deadPID)+"-file")
	require.NoError(t, os.WriteFile(staleFile, nil, 0o644))

	removed := reapStale(parent, Config{}.logger())

	assert.Equal(t, []string{stale}, removed)
	assert.NoDirExists(t, stale)
	for _, kept := range []string{mine, unrelated, noPID} {
		assert.DirExists(t, kept)
	}
	assert.FileExists(t, staleFile)
	// A signalled child would still exist (as a zombie) until waited for:
	// its exit status is what tells.
	require.NoError(t, stdin.Close())
	bystanderDone = true
	assert.NoError(t, bystander.Wait(),
		"a pid in a stale postmaster.pid that is not that server must not be killed")
}

func TestOwnerPIDsAreReadOnlyFromOurDirectoryNames(t *testing.T) {
	cases := map[string]int{
		dirPrefix + "123-abc": 123,
		dirPrefix + "7-x-y":   7,
		dirPrefix + "123":     0, // no random part: not ours
		dirPrefix + "-12-abc": 0,
		dirPrefix + "0-abc":   0,
		"other-123-abc":       0,
		dirPrefix + "12a-abc": 0,
		dirPrefix + " 12-abc": 0,
	}
	for name, want := range cases {
		pid, ok := ownerPID(name)
		assert.Equal(t, want != 0, ok, name)
		assert.Equal(t, want, pid, name)
	}
}
