// Package volumetest is the conformance table of module volumes for tests
// outside package landing (the registry's served-activation tests, the
// examples): every landing.Volume the landing provides, and how a test
// gets a fresh one — a directory, or a bucket on an S3-protocol server the
// test starts (internal/s3test). A test that runs ForEach holds on every
// kind; TestEveryVolumeConstructorIsAKind fails when the landing gains a
// Volume constructor that is not here. (Package landing's own tests keep
// the same table in conformance_test.go: they cannot import this package.)
package volumetest

import (
	"context"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
	"io"
	"testing"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/registry/landing"
)

// Kind is a member of the table.
type Kind struct {
	Name string
	// Constructors are the landing's functions that return this kind.
	Constructors []string
	// Open returns a fresh, empty volume and a function giving further
	// handles on the same storage, as another replica would open it.
	Open func(t *testing.T) (v landing.Volume, replica func() landing.Volume)
}

// Kinds is the table.
func Kinds() []Kind {
	return []Kind{
		{Name: "dir", Constructors: []string{"DirVolume"}, Open: func(t *testing.T) (landing.Volume, func() landing.Volume) {
			root := t.TempDir()
			open := func() landing.Volume {
				v := landing.DirVolume(root)
				t.Cleanup(func() { _ = v.(io.Closer).Close() })
				return v
			}
			return open(), open
		}},
		{Name: "s3", Constructors: []string{"s3volume.New", "s3volume.Open"}, Open: func(t *testing.T) (landing.Volume, func() landing.Volume) {
			srv := s3test.Start(t)
			open := func() landing.Volume {
				v, err := s3volume.New(s3volume.Options{Client: srv.Client(), Bucket: srv.Bucket, Prefix: "registry"})
				if err != nil {
					t.Fatalf("volumetest: %v", err)
				}
				return v
			}
			return open(), open
		}},
	}
}

// ForEach runs test once per kind, as a subtest named after it.
func ForEach(t *testing.T, test func(t *testing.T, k Kind)) {
	t.Helper()
	for _, k := range Kinds() {
		t.Run(k.Name, func(t *testing.T) { test(t, k) })
	}
}

// KeepExclusive returns wrapper, a test's wrapper around inner, with
// inner's CreateExclusive when inner has one (and wrapper has not): a
// wrapper that hid it would make the landing rename on object storage,
// which the S3 volume refuses.
func KeepExclusive(wrapper, inner landing.Volume) landing.Volume {
	if x, ok := inner.(landing.ExclusiveVolume); ok {
		if _, ok := wrapper.(landing.ExclusiveVolume); !ok {
			return exclusive{Volume: wrapper, x: x}
		}
	}
	return wrapper
}

type exclusive struct {
	landing.Volume
	x landing.ExclusiveVolume
}

func (e exclusive) CreateExclusive(ctx context.Context, name string, data []byte) error {
	return e.x.CreateExclusive(ctx, name, data)
}

// WriteFrom streams when the wrapper can.
func (e exclusive) WriteFrom(ctx context.Context, name string, r io.Reader) error {
	if sv, ok := e.Volume.(landing.StreamingVolume); ok {
		return sv.WriteFrom(ctx, name, r)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return e.Volume.WriteFile(ctx, name, data)
}
