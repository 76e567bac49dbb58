package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"sync/atomic"
	"time"

	"github.com/meshrx/meshrx/registry/landing"
)

// slowableVolume is the module volume both replicas share: a directory,
// with a delay per file operation the schedule can switch on (a network
// share that turns slow) and off.
type slowableVolume struct {
	v     landing.Volume
	delay atomic.Int64 // time.Duration per operation; 0: none
}

func (s *slowableVolume) setDelay(d time.Duration) { s.delay.Store(int64(d)) }

func (s *slowableVolume) wait(ctx context.Context, op, name string) error {
	d := time.Duration(s.delay.Load())
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("slow volume (%s per operation): %w", d, ctx.Err())}
	}
}

func (s *slowableVolume) MkdirAll(ctx context.Context, name string) error {
	if err := s.wait(ctx, "mkdir", name); err != nil {
		return err
	}
	return s.v.MkdirAll(ctx, name)
}

func (s *slowableVolume) WriteFile(ctx context.Context, name string, data []byte) error {
	if err := s.wait(ctx, "write", name); err != nil {
		return err
	}
	return s.v.WriteFile(ctx, name, data)
}

func (s *slowableVolume) Rename(ctx context.Context, oldname, newname string) error {
	if err := s.wait(ctx, "rename", oldname); err != nil {
		return err
	}
	return s.v.Rename(ctx, oldname, newname)
}

func (s *slowableVolume) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if err := s.wait(ctx, "readdir", name); err != nil {
		return nil, err
	}
	return s.v.ReadDir(ctx, name)
}

func (s *slowableVolume) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	if err := s.wait(ctx, "read", name); err != nil {
		return nil, err
	}
	return s.v.ReadFile(ctx, name, max)
}

func (s *slowableVolume) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := s.wait(ctx, "stat", name); err != nil {
		return nil, err
	}
	return s.v.Stat(ctx, name)
}

func (s *slowableVolume) RemoveAll(ctx context.Context, name string) error {
	if err := s.wait(ctx, "remove", name); err != nil {
		return err
	}
	return s.v.RemoveAll(ctx, name)
}

func (s *slowableVolume) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := s.wait(ctx, "open", name); err != nil {
		return nil, err
	}
	return s.v.Open(ctx, name)
}

var _ landing.Volume = (*slowableVolume)(nil)

// exclusiveAsInner is s, with the CreateExclusive of the volume it wraps
// when that is object storage (slowed like every other operation): the
// landing claims and commits with it there, and has no rename.
func (s *slowableVolume) exclusiveAsInner() landing.Volume {
	if x, ok := s.v.(landing.ExclusiveVolume); ok {
		return slowExclusive{slowableVolume: s, x: x}
	}
	return s
}

type slowExclusive struct {
	*slowableVolume
	x landing.ExclusiveVolume
}

func (s slowExclusive) CreateExclusive(ctx context.Context, name string, data []byte) error {
	if err := s.wait(ctx, "createexclusive", name); err != nil {
		return err
	}
	return s.x.CreateExclusive(ctx, name, data)
}
