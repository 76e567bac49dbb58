//go:build !unix

package memstore_test

import "time"

// processCPU is not measured here: the cpu-ns/op metrics read 0.
func processCPU() time.Duration { return 0 }
