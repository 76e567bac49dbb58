package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/meshrx/meshrx/registry/landing"
)

// slowVolume adds a simulated round trip before every operation.
type slowVolume struct {
	v     landing.Volume
	perOp time.Duration
}

// newSlowVolume wraps v so that every operation first waits perOp, standing in
// for a network share's round trip in examples and load tests. The wait ends
// early, with ctx's error, when ctx is done.
func newSlowVolume(v landing.Volume, perOp time.Duration) landing.Volume {
	return slowVolume{v: v, perOp: perOp}
}

func (s slowVolume) roundTrip(ctx context.Context, op, name string) error {
	if s.perOp <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(s.perOp)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("simulated round trip of %s: %w", s.perOp, ctx.Err())}
	}
}

func (s slowVolume) MkdirAll(ctx context.Context, name string) error {
	if err := s.roundTrip(ctx, "mkdirall", name); err != nil {
		return err
	}
	return s.v.MkdirAll(ctx, name)
}

func (s slowVolume) WriteFile(ctx context.Context, name string, data []byte) error {
	if err := s.roundTrip(ctx, "writefile", name); err != nil {
		return err
	}
	return s.v.WriteFile(ctx, name, data)
}

func (s slowVolume) WriteFrom(ctx context.Context, name string, r io.Reader) error {
	if err := s.roundTrip(ctx, "writefrom", name); err != nil {
		return err
	}
	if sv, ok := s.v.(landing.StreamingVolume); ok {
		return sv.WriteFrom(ctx, name, r)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return s.v.WriteFile(ctx, name, data)
}

func (s slowVolume) Rename(ctx context.Context, oldname, newname string) error {
	if err := s.roundTrip(ctx, "rename", oldname); err != nil {
		return err
	}
	return s.v.Rename(ctx, oldname, newname)
}

func (s slowVolume) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	if err := s.roundTrip(ctx, "readdir", name); err != nil {
		return nil, err
	}
	return s.v.ReadDir(ctx, name)
}

func (s slowVolume) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	if err := s.roundTrip(ctx, "readfile", name); err != nil {
		return nil, err
	}
	return s.v.ReadFile(ctx, name, max)
}

func (s slowVolume) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := s.roundTrip(ctx, "stat", name); err != nil {
		return nil, err
	}
	return s.v.Stat(ctx, name)
}

func (s slowVolume) RemoveAll(ctx context.Context, name string) error {
	if err := s.roundTrip(ctx, "removeall", name); err != nil {
		return err
	}
	return s.v.RemoveAll(ctx, name)
}

func (s slowVolume) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := s.roundTrip(ctx, "open", name); err != nil {
		return nil, err
	}
	return s.v.Open(ctx, name)
}
