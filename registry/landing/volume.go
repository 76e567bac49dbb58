package landing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Volume is the file system a ModuleLanding works on: a local disk or a
// shared volume. Names are slash-separated and relative to the volume's root
// (the rules of [fs.ValidPath]). Every method is one file operation, one round
// trip on a network share, which is the unit the cost model and the tests
// count. An implementation should give up when ctx is done; an operation that
// cannot be interrupted once started must still honour ctx before it starts.
type Volume interface {
	// MkdirAll creates the directory name and any missing parents.
	MkdirAll(ctx context.Context, name string) error
	// WriteFile creates or truncates name and writes data. It is not atomic;
	// the landing composes it with Rename where readers must not see a torn file.
	WriteFile(ctx context.Context, name string, data []byte) error
	// Rename moves oldname to newname, atomically where the volume allows.
	Rename(ctx context.Context, oldname, newname string) error
	// ReadDir lists the directory name, sorted by file name.
	ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error)
	// ReadFile returns the contents of name.
	ReadFile(ctx context.Context, name string) ([]byte, error)
	// Stat describes name.
	Stat(ctx context.Context, name string) (fs.FileInfo, error)
	// RemoveAll removes name and everything beneath it; a missing name is not an error.
	RemoveAll(ctx context.Context, name string) error
	// Open opens name for streaming; the caller closes it.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
}

// StreamingVolume is a Volume that can write a file from a reader, so that
// a bundle is copied to the volume without being held in memory. A Volume
// that is not one gets the bytes read whole and passed to WriteFile.
type StreamingVolume interface {
	Volume
	// WriteFrom creates or truncates name and copies r into it. Like
	// WriteFile it is not atomic.
	WriteFrom(ctx context.Context, name string, r io.Reader) error
}

// writeStream writes r to name on v, streaming when v can.
func writeStream(ctx context.Context, v Volume, name string, r io.Reader) error {
	if sv, ok := v.(StreamingVolume); ok {
		return sv.WriteFrom(ctx, name, r)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return v.WriteFile(ctx, name, data)
}

// dirVolume is a Volume on a local directory, confined to it by os.Root, which
// refuses names that leave the root, including through symbolic links.
type dirVolume struct {
	root string

	mu     sync.Mutex
	r      *os.Root // opened by the first operation, kept until Close
	closed bool
}

// DirVolume returns a Volume on the existing directory root. Every name is
// resolved beneath root; a name that would escape it (by "..", an absolute
// path or a symbolic link) is refused with an error wrapping [fs.ErrInvalid]
// or the operating system's refusal.
//
// The root is opened once, by the first operation, and that descriptor
// serves every later one (a root that cannot be opened is tried again by the
// next operation). The returned Volume is an [io.Closer] and a
// [StreamingVolume]; Close releases the descriptor.
func DirVolume(root string) Volume { return &dirVolume{root: root} }

// errVolumeClosed is returned by a DirVolume's operations after Close.
var errVolumeClosed = errors.New("the volume is closed")

func (d *dirVolume) open() (*os.Root, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.closed:
		return nil, errVolumeClosed
	case d.r != nil:
		return d.r, nil
	}
	r, err := os.OpenRoot(d.root)
	if err != nil {
		return nil, fmt.Errorf("open volume root %s: %w", d.root, err)
	}
	d.r = r
	return r, nil
}

// Close releases the root's descriptor; later operations fail.
func (d *dirVolume) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.r == nil {
		return nil
	}
	r := d.r
	d.r = nil
	return r.Close()
}

// do checks the name and ctx and runs op on the root.
func (d *dirVolume) do(ctx context.Context, opName, name string, op func(r *os.Root) error) error {
	if !fs.ValidPath(name) {
		return &fs.PathError{Op: opName, Path: name, Err: fs.ErrInvalid}
	}
	if err := ctx.Err(); err != nil {
		return &fs.PathError{Op: opName, Path: name, Err: err}
	}
	r, err := d.open()
	if err != nil {
		return &fs.PathError{Op: opName, Path: name, Err: err}
	}
	return op(r)
}

func (d *dirVolume) WriteFrom(ctx context.Context, name string, src io.Reader) error {
	return d.do(ctx, "writefrom", name, func(r *os.Root) error {
		f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, ctxReader{ctx: ctx, r: src})
		return errors.Join(err, f.Close())
	})
}

// ctxReader stops a copy between reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func (d *dirVolume) MkdirAll(ctx context.Context, name string) error {
	return d.do(ctx, "mkdirall", name, func(r *os.Root) error { return r.MkdirAll(name, 0o755) })
}

func (d *dirVolume) WriteFile(ctx context.Context, name string, data []byte) error {
	return d.do(ctx, "writefile", name, func(r *os.Root) error { return r.WriteFile(name, data, 0o644) })
}

func (d *dirVolume) Rename(ctx context.Context, oldname, newname string) error {
	if !fs.ValidPath(newname) {
		return &fs.PathError{Op: "rename", Path: newname, Err: fs.ErrInvalid}
	}
	return d.do(ctx, "rename", oldname, func(r *os.Root) error { return r.Rename(oldname, newname) })
}

func (d *dirVolume) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	var entries []fs.DirEntry
	err := d.do(ctx, "readdir", name, func(r *os.Root) error {
		var err error
		entries, err = fs.ReadDir(r.FS(), name)
		return err
	})
	return entries, err
}

func (d *dirVolume) ReadFile(ctx context.Context, name string) ([]byte, error) {
	var data []byte
	err := d.do(ctx, "readfile", name, func(r *os.Root) error {
		var err error
		data, err = r.ReadFile(name)
		return err
	})
	return data, err
}

func (d *dirVolume) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	var info fs.FileInfo
	err := d.do(ctx, "stat", name, func(r *os.Root) error {
		var err error
		info, err = r.Stat(name)
		return err
	})
	return info, err
}

func (d *dirVolume) RemoveAll(ctx context.Context, name string) error {
	if name == "." {
		return &fs.PathError{Op: "removeall", Path: name, Err: fmt.Errorf("refusing to remove the volume root: %w", fs.ErrInvalid)}
	}
	return d.do(ctx, "removeall", name, func(r *os.Root) error { return r.RemoveAll(name) })
}

func (d *dirVolume) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	var f *os.File
	err := d.do(ctx, "open", name, func(r *os.Root) error {
		var err error
		f, err = r.Open(name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, nil
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

func (c *CountedVolume) ReadFile(ctx context.Context, name string) ([]byte, error) {
	c.readFile.Add(1)
	return c.v.ReadFile(ctx, name)
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

// slowVolume adds a simulated round trip before every operation.
type slowVolume struct {
	v     Volume
	perOp time.Duration
}

// SlowVolume wraps v so that every operation first waits perOp, standing in
// for a network share's round trip in examples and load tests. The wait ends
// early, with ctx's error, when ctx is done.
func SlowVolume(v Volume, perOp time.Duration) Volume { return slowVolume{v: v, perOp: perOp} }

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
	return writeStream(ctx, s.v, name, r)
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

func (s slowVolume) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if err := s.roundTrip(ctx, "readfile", name); err != nil {
		return nil, err
	}
	return s.v.ReadFile(ctx, name)
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

// sortedEntries returns entries sorted by name, so that code reading a Volume
// does not depend on an implementation keeping its promise to sort.
func sortedEntries(entries []fs.DirEntry) []fs.DirEntry {
	if slices.IsSortedFunc(entries, compareEntries) {
		return entries
	}
	out := slices.Clone(entries)
	slices.SortFunc(out, compareEntries)
	return out
}

func compareEntries(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) }
