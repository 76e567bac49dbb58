package testkit

import (
	"context"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
)

// Volume is the file system a registry landing works on, as
// registry/landing declares it: every landing.Volume is one, and a
// CountedVolume is a landing.Volume (and a landing.StreamingVolume).
// It is declared here, not imported, so that the landing's own tests can
// count their volume's operations too.
type Volume interface {
	MkdirAll(ctx context.Context, name string) error
	WriteFile(ctx context.Context, name string, data []byte) error
	Rename(ctx context.Context, oldname, newname string) error
	ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error)
	ReadFile(ctx context.Context, name string, max int64) ([]byte, error)
	Stat(ctx context.Context, name string) (fs.FileInfo, error)
	RemoveAll(ctx context.Context, name string) error
	Open(ctx context.Context, name string) (io.ReadCloser, error)
}

// writeStream writes r to name on v, streaming when v can (as
// landing.StreamingVolume does).
func writeStream(ctx context.Context, v Volume, name string, r io.Reader) error {
	if sv, ok := v.(interface {
		WriteFrom(ctx context.Context, name string, r io.Reader) error
	}); ok {
		return sv.WriteFrom(ctx, name, r)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return v.WriteFile(ctx, name, data)
}

// OpCounts is how many operations of each kind a CountedVolume has seen.
type OpCounts struct {
	MkdirAll, WriteFile, Rename, ReadDir, ReadFile, Stat, RemoveAll, Open int64
}

// Total is the number of operations of every kind.
func (c OpCounts) Total() int64 {
	return c.MkdirAll + c.WriteFile + c.Rename + c.ReadDir + c.ReadFile + c.Stat + c.RemoveAll + c.Open
}

// Sub returns c minus earlier, the operations between two snapshots.
func (c OpCounts) Sub(earlier OpCounts) OpCounts {
	return OpCounts{
		MkdirAll:  c.MkdirAll - earlier.MkdirAll,
		WriteFile: c.WriteFile - earlier.WriteFile,
		Rename:    c.Rename - earlier.Rename,
		ReadDir:   c.ReadDir - earlier.ReadDir,
		ReadFile:  c.ReadFile - earlier.ReadFile,
		Stat:      c.Stat - earlier.Stat,
		RemoveAll: c.RemoveAll - earlier.RemoveAll,
		Open:      c.Open - earlier.Open,
	}
}

// CountedVolume is a Volume that counts the operations passed to the Volume
// it wraps, failed ones included. It is safe for concurrent use.
type CountedVolume struct {
	v                                                               Volume
	mkdirAll, writeFile, rename, readDir, readFile, stat, rmAll, op atomic.Int64
}

// CountingVolume wraps v so that its operations are counted: what a scan
// costs in round trips on a network share.
func CountingVolume(v Volume) *CountedVolume { return &CountedVolume{v: v} }

// Ops returns the counts so far.
func (c *CountedVolume) Ops() OpCounts {
	return OpCounts{
		MkdirAll: c.mkdirAll.Load(), WriteFile: c.writeFile.Load(), Rename: c.rename.Load(),
		ReadDir: c.readDir.Load(), ReadFile: c.readFile.Load(), Stat: c.stat.Load(),
		RemoveAll: c.rmAll.Load(), Open: c.op.Load(),
	}
}

func (c *CountedVolume) MkdirAll(ctx context.Context, name string) error {
	c.mkdirAll.Add(1)
	return c.v.MkdirAll(ctx, name)
}

func (c *CountedVolume) WriteFile(ctx context.Context, name string, data []byte) error {
	c.writeFile.Add(1)
	return c.v.WriteFile(ctx, name, data)
}

// WriteFrom counts as a WriteFile; it streams when the wrapped Volume can.
func (c *CountedVolume) WriteFrom(ctx context.Context, name string, r io.Reader) error {
	c.writeFile.Add(1)
	return writeStream(ctx, c.v, name, r)
}

func (c *CountedVolume) Rename(ctx context.Context, oldname, newname string) error {
	c.rename.Add(1)
	return c.v.Rename(ctx, oldname, newname)
}

func (c *CountedVolume) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	c.readDir.Add(1)
	return c.v.ReadDir(ctx, name)
}

func (c *CountedVolume) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	c.readFile.Add(1)
	return c.v.ReadFile(ctx, name, max)
}

func (c *CountedVolume) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	c.stat.Add(1)
	return c.v.Stat(ctx, name)
}

func (c *CountedVolume) RemoveAll(ctx context.Context, name string) error {
	c.rmAll.Add(1)
	return c.v.RemoveAll(ctx, name)
}

func (c *CountedVolume) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	c.op.Add(1)
	return c.v.Open(ctx, name)
}

// GatedVolume holds the first ReadDir of directory Dir after it is armed,
// until the gate opens or the caller's context ends.
type GatedVolume struct {
	Volume
	Dir string

	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	gate    *Releaser
}

// Arm makes the next ReadDir of Dir wait for gate; the returned channel
// receives once it waits.
func (g *GatedVolume) Arm(gate *Releaser) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.gate, g.entered = true, gate, make(chan struct{}, 1)
	return g.entered
}

func (g *GatedVolume) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	g.mu.Lock()
	hold := g.armed && name == g.Dir
	gate, entered := g.gate, g.entered
	if hold {
		g.armed = false
	}
	g.mu.Unlock()
	if hold {
		entered <- struct{}{}
		gate.Wait(ctx)
		if err := ctx.Err(); err != nil {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
		}
	}
	return g.Volume.ReadDir(ctx, name)
}
