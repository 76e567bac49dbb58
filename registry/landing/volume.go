package landing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unicode"
)

// Volume is the file system a ModuleLanding works on: a local disk or a
// shared volume. Names are slash-separated and relative to the volume's root
// (the rules of [fs.ValidPath]) and hold no control character
// ([unicode.IsControl]: an object store's listing cannot carry one); every
// volume refuses another name with an error wrapping [fs.ErrInvalid],
// before any I/O. Every method is one file operation, one round
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
	// ReadFile returns the contents of name, which must be at most max bytes
	// (max ≥ 0): a larger file is refused with an error whose TooLarge method
	// reports true (see IsTooLarge), having read at most max+1 bytes of it,
	// so that a file grown by accident or by an attacker costs no more memory
	// than the read allowed. The landing reads only its own small files whole
	// (records, version claims, journal entries); bundles are Opened.
	ReadFile(ctx context.Context, name string, max int64) ([]byte, error)
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
	// WriteFrom creates or truncates name and copies r into it, from
	// where r stands (a seekable r already read in part writes its rest).
	// Like WriteFile it is not atomic.
	WriteFrom(ctx context.Context, name string, r io.Reader) error
}

// ExclusiveVolume is a Volume that has no rename but whose files appear
// whole: object storage. A ModuleLanding on one never calls Rename; it
// writes every file under its final name and makes its claims and commits
// (a version's claim, a journal entry, a record) with CreateExclusive. A
// Volume that is not one (DirVolume) is written through staging directories
// renamed into place, as before. A wrapper around an ExclusiveVolume must
// be one too, or the landing falls back to Rename, which an object store's
// volume refuses (registry/landing/s3volume): it fails loudly, it never
// claims twice.
type ExclusiveVolume interface {
	Volume
	// CreateExclusive creates name holding data, atomically: a reader sees
	// all of data or no file. When name exists it fails with an error
	// wrapping fs.ErrExist, also when another process creates it at the
	// same moment: of concurrent creations of one name, exactly one
	// succeeds.
	CreateExclusive(ctx context.Context, name string, data []byte) error
}

// NameLimitedVolume is a Volume whose names hold at most MaxNameLen bytes:
// an object store's key limit less its prefix (S3's keys hold 1,024). A
// ModuleLanding on one refuses an archive with an entry whose name would
// not fit beneath the longest generation directory, as an *ArchiveError,
// before writing anything (CheckArchive too); on another Volume an entry
// name holds up to 1,024 bytes.
type NameLimitedVolume interface {
	Volume
	MaxNameLen() int
}

// ErrUnavailable may be wrapped by a volume error that says the volume
// could not be reached or did not answer; see IsUnavailable.
var ErrUnavailable = errors.New("the volume is unavailable")

// IsUnavailable reports whether err says the volume could not be reached
// or did not answer (an object store down, stalled, or answering 5xx): it
// wraps ErrUnavailable, or an error whose Unavailable method reports true
// (as registry/landing/s3volume's do). The registry answers it 503 with
// Retry-After.
func IsUnavailable(err error) bool {
	var u interface{ Unavailable() bool }
	return errors.Is(err, ErrUnavailable) || errors.As(err, &u) && u.Unavailable()
}

// FileTooLargeError is a volume's refusal to read a file whole that holds
// more than the read allowed.
type FileTooLargeError struct {
	Name string // the file
	Max  int64  // the read's bound, in bytes
}

func (e *FileTooLargeError) Error() string {
	return fmt.Sprintf("volume file %s holds more than the %d bytes the read allows", e.Name, e.Max)
}

// TooLarge reports true: see IsTooLarge.
func (e *FileTooLargeError) TooLarge() bool { return true }

// IsTooLarge reports whether err says a Volume's ReadFile refused a file
// larger than its bound: a *FileTooLargeError, or an error whose TooLarge
// method reports true (as registry/landing/s3volume's do, which cannot
// import this package).
func IsTooLarge(err error) bool {
	var t interface{ TooLarge() bool }
	return errors.As(err, &t) && t.TooLarge()
}

// ReadAtMost reads r to its end when it holds at most max bytes, reading no
// more than max+1 of them; a larger r is a *FileTooLargeError naming name.
// It is a Volume implementation's ReadFile after the open.
func ReadAtMost(r io.Reader, name string, max int64) ([]byte, error) {
	if max < 0 {
		return nil, fmt.Errorf("volume: read of %s with a negative bound %d", name, max)
	}
	data, err := io.ReadAll(io.LimitReader(r, max+min(1, math.MaxInt64-max))) // max+1, not past MaxInt64
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &FileTooLargeError{Name: name, Max: max}
	}
	return data, nil
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
// An error of the share that holds root (an input/output error, a stale
// handle, a time-out, a connection lost) is IsUnavailable, as an object
// store's outage is. ReadFile and Open read regular files only: a
// directory, a named pipe or a device is refused with an error saying so,
// without waiting on it; ReadDir does not wait on a named pipe either.
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

// errBadName is a Volume's refusal of a name that is not one (see Volume).
var errBadName = fmt.Errorf("%w: a volume name is a slash-separated relative path (fs.ValidPath) without control characters", fs.ErrInvalid)

// validName reports whether name is a Volume's name.
func validName(name string) bool {
	return fs.ValidPath(name) && !strings.ContainsFunc(name, unicode.IsControl)
}

// do checks the name and ctx and runs op on the root.
func (d *dirVolume) do(ctx context.Context, opName, name string, op func(r *os.Root) error) error {
	if !validName(name) {
		return &fs.PathError{Op: opName, Path: name, Err: errBadName}
	}
	if err := ctx.Err(); err != nil {
		return &fs.PathError{Op: opName, Path: name, Err: err}
	}
	r, err := d.open()
	if err != nil {
		return unreachable(&fs.PathError{Op: opName, Path: name, Err: err})
	}
	return unreachable(op(r))
}

// unreachable marks err unavailable when it is a share's that did not
// answer (an NFS or SMB mount gone away or timing out, a failing disk): an
// outage, as an object store's 5xx is, not an answer about the file. The
// landing then fails the read instead of taking the file for a bad one
// and reading an older record in its place.
func unreachable(err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err
	}
	switch errno {
	case syscall.EIO, syscall.ESTALE, syscall.ETIMEDOUT, syscall.ENOTCONN, syscall.ECONNRESET,
		syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EHOSTDOWN, syscall.EHOSTUNREACH,
		syscall.ENETDOWN, syscall.ENETUNREACH:
		return fmt.Errorf("%w: %w", err, ErrUnavailable)
	}
	return err
}

func (d *dirVolume) WriteFrom(ctx context.Context, name string, src io.Reader) error {
	in := &sourceReader{ctx: ctx, r: src}
	err := d.do(ctx, "writefrom", name, func(r *os.Root) error {
		f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, in)
		return errors.Join(err, f.Close())
	})
	if in.err != nil {
		// The source's failure (a local spool file's EIO, say) is not the
		// share's: never an outage of the volume.
		return fmt.Errorf("writefrom %s: reading the source: %w", name, in.err)
	}
	return err
}

// sourceReader is WriteFrom's source: it stops a copy between reads once
// ctx is done, and keeps the source's own failure apart from the share's.
type sourceReader struct {
	ctx context.Context
	r   io.Reader
	err error // the source's failure (io.EOF is none), or ctx's end
}

func (s *sourceReader) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		s.err = err
		return 0, err
	}
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

func (d *dirVolume) MkdirAll(ctx context.Context, name string) error {
	return d.do(ctx, "mkdirall", name, func(r *os.Root) error { return r.MkdirAll(name, 0o755) })
}

func (d *dirVolume) WriteFile(ctx context.Context, name string, data []byte) error {
	return d.do(ctx, "writefile", name, func(r *os.Root) error { return r.WriteFile(name, data, 0o644) })
}

func (d *dirVolume) Rename(ctx context.Context, oldname, newname string) error {
	if !validName(newname) {
		return &fs.PathError{Op: "rename", Path: newname, Err: errBadName}
	}
	return d.do(ctx, "rename", oldname, func(r *os.Root) error { return r.Rename(oldname, newname) })
}

func (d *dirVolume) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	var entries []fs.DirEntry
	err := d.do(ctx, "readdir", name, func(r *os.Root) error {
		f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a pipe's open would wait
		if err != nil {
			return err
		}
		defer f.Close()
		entries, err = f.ReadDir(-1)
		slices.SortFunc(entries, compareEntries)
		return err
	})
	return entries, err
}

func (d *dirVolume) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	if max < 0 {
		return nil, fmt.Errorf("volume: read of %s with a negative bound %d", name, max)
	}
	var data []byte
	err := d.do(ctx, "readfile", name, func(r *os.Root) error {
		f, size, err := openRegular(r, name)
		if err != nil {
			return err
		}
		defer f.Close()
		// The size is not trusted (the file may grow while it is read), but
		// a file already too large is refused without reading it.
		if size > max {
			return &FileTooLargeError{Name: name, Max: max}
		}
		data, err = ReadAtMost(f, name, max)
		return err
	})
	return data, err
}

// errNotRegular refuses a read of a directory, a pipe or a device.
var errNotRegular = errors.New("not a regular file")

// openRegular opens name for reading if it is a regular file, and returns
// its size. The open does not wait: a named pipe placed on the volume
// would otherwise hold the open until a writer came, beyond any context.
func openRegular(r *os.Root, name string) (*os.File, int64, error) {
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: name, Err: errNotRegular}
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return f, info.Size(), nil
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
		f, _, err = openRegular(r, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, nil
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
