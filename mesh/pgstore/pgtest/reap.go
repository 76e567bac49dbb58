package pgtest

import (
	"bufio"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// reapStale removes local server directories under parent whose owning
// process has exited (a test binary that crashed or was killed), first
// killing a server still running there. Directories of live processes and
// anything not named like ours are left alone. It returns what it removed.
func reapStale(parent string, logger *slog.Logger) []string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		owner, ok := ownerPID(e.Name())
		if !ok || !e.IsDir() || processExists(owner) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		dataDir := filepath.Join(dir, "data")
		if pid, ok := postmasterPID(dataDir); ok && isServerOf(pid, dataDir) {
			// The server of a dead test binary: its data is worthless.
			_ = signalProcess(pid, syscall.SIGKILL)
		}
		if err := os.RemoveAll(dir); err != nil {
			logger.Warn("pgtest: could not remove a stale server directory", "dir", dir, "err", err)
			continue
		}
		logger.Info("pgtest: removed a stale server directory", "dir", dir, "owner_pid", owner)
		removed = append(removed, dir)
	}
	return removed
}

// ownerPID parses the owning process id out of a directory name made by
// startCluster (meshrx-pgtest-<pid>-<random>).
func ownerPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, dirPrefix)
	if !ok {
		return 0, false
	}
	pidText, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(pidText)
	return pid, err == nil && pid > 0
}

// postmasterPID reads the server's process id from the first line of
// postmaster.pid.
func postmasterPID(dataDir string) (int, bool) {
	f, err := os.Open(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	return pid, err == nil && pid > 0
}
