//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// dataLockFile is the file in the data directory an embedded-store
// registry holds locked while it runs.
const dataLockFile = "registry.lock"

// lockData claims dir for this process, or names -data as in use. The
// lock is the kernel's (flock): it ends with the process, however it ends.
func lockData(dir string) (unlock func() error, err error) {
	f, err := os.OpenFile(filepath.Join(dir, dataLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the data directory (-data): %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("-data %s is in use by another registry on the embedded store: each keeps its own mesh, so they would overwrite each other's demo key and serve each other's bundles to nobody; give this one its own -data, or run both on one database with -pg", dir)
		}
		return nil, fmt.Errorf("locking the data directory (-data): %w", err)
	}
	return f.Close, nil
}
