// Package s3volume is a module volume (a landing.Volume) on S3-compatible
// object storage: AWS S3, MinIO, SeaweedFS, Ceph RGW, R2 — any store that
// speaks the S3 protocol, through the AWS SDK for Go v2.
//
// Object storage has no rename. The volume is a landing.ExclusiveVolume:
// a ModuleLanding on it writes every file under its final name and makes
// its claims and commits (a version's claim, a journal entry, a record)
// with CreateExclusive, a PUT carrying If-None-Match: * that the store
// refuses (412) when the key exists, so of concurrent claims from any
// number of replicas exactly one succeeds. Rename is refused (ErrNoRename).
//
// Every request is bounded by Options.CallBudget on an injected clock; one
// that trips it, or finds the store unreachable, answering 5xx (or 408 or
// 429: call again later) or cutting its answer short, is an *Error whose
// Unavailable method reports true (landing.IsUnavailable), which the
// registry answers 503 with Retry-After, naming its stage. Uploads stream
// (a seekable source from where it stands, a stream of unknown length
// through a temporary file past 1 MiB); downloads stream the object's body.
//
// The package does not import registry/landing: it implements its
// interfaces (Go's are structural), so that the landing's own tests can run
// on it and a registry consumer (registry/client imports landing) does not
// pull in the AWS SDK.
package s3volume

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/benbjohnson/clock"
)

// ErrNoRename is the volume's answer to Rename: object storage has none.
// A landing writes a Volume through CreateExclusive (landing.ExclusiveVolume);
// a wrapper that hides that method makes its landings fail with this error.
var ErrNoRename = errors.New("object storage has no rename; a ModuleLanding writes an ExclusiveVolume through CreateExclusive (a wrapper must pass that method on)")

// DefaultCallBudget bounds one request to the object store when
// Options.CallBudget is zero.
const DefaultCallBudget = 30 * time.Second

// smallWrite is the most WriteFrom holds in memory: a longer stream of
// unknown length is spooled to a temporary file and uploaded from there.
const smallWrite = 1 << 20

// Options configures an S3 volume.
type Options struct {
	// Client is the S3 client (required by New; Open builds it). Its HTTP
	// client should follow no redirect, as Open's does not (Go's turns a
	// redirected PUT into a GET, whose 200 would pass for the write's).
	Client *s3.Client
	// Bucket holds the volume (required).
	Bucket string
	// Prefix is where the volume's root is in the bucket: "" is the
	// bucket's root; otherwise every key starts with Prefix + "/".
	Prefix string
	// CallBudget bounds each request to the object store (for a download,
	// until its answer starts; the stream is then bounded by the caller's
	// context). A request that trips it fails with an *Error
	// naming the operation and the key, wrapping context.DeadlineExceeded,
	// and Unavailable. Default DefaultCallBudget.
	CallBudget time.Duration
	// Clock times CallBudget; nil is the real clock.
	Clock clock.Clock
}

// OptionsError reports an Options field New cannot make a volume with.
type OptionsError struct {
	Setting string // e.g. "Options.Bucket"
	Problem string
}

func (e *OptionsError) Error() string { return "s3volume: " + e.Setting + " " + e.Problem }

// Volume is a module volume on an S3 bucket (AWS S3, or any store speaking its
// protocol: MinIO, SeaweedFS, Ceph RGW, R2). Directories are key prefixes:
// MkdirAll costs nothing and a directory exists while an object is beneath
// it. It is an ExclusiveVolume (PUT with If-None-Match: *) and a
// StreamingVolume. Safe for concurrent use.
type Volume struct {
	c      *s3.Client
	bucket string
	prefix string // "" or ending in "/"
	budget time.Duration
	clk    clock.Clock

	closeIdle func() // set by Open
}

// New returns a volume on opts.Bucket under opts.Prefix. It does no I/O.
func New(opts Options) (*Volume, error) {
	if opts.Client == nil {
		return nil, &OptionsError{Setting: "Options.Client", Problem: "is nil (New needs a client; Open builds one)"}
	}
	if opts.Bucket == "" {
		return nil, &OptionsError{Setting: "Options.Bucket", Problem: "is empty"}
	}
	if opts.CallBudget < 0 {
		return nil, &OptionsError{Setting: "Options.CallBudget", Problem: fmt.Sprintf("is %s; it must not be negative (zero takes the default)", opts.CallBudget)}
	}
	prefix := strings.Trim(opts.Prefix, "/")
	if prefix != "" {
		if !validName(prefix) {
			return nil, &OptionsError{Setting: "Options.Prefix", Problem: fmt.Sprintf("%q is not a slash-separated relative path without control characters", opts.Prefix)}
		}
		prefix += "/"
	}
	v := &Volume{c: opts.Client, bucket: opts.Bucket, prefix: prefix, budget: opts.CallBudget, clk: opts.Clock}
	if v.budget == 0 {
		v.budget = DefaultCallBudget
	}
	if v.clk == nil {
		v.clk = clock.New()
	}
	return v, nil
}

// Open returns a volume for a URL of the form
// s3://bucket/prefix?endpoint=URL&region=REGION. endpoint is the store's
// URL (default AWS S3; with one given, requests use path-style addressing,
// as MinIO, SeaweedFS and most other stores expect); region defaults to the
// AWS configuration's, else us-east-1. Credentials come from the standard
// AWS environment variables and files. opts.Client, Bucket and Prefix are
// taken from the URL.
func Open(ctx context.Context, rawURL string, opts Options) (*Volume, error) {
	// Errors name the URL without its query, user information or values
	// (shown): a secret put there by mistake is not echoed to a log.
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("s3volume: the volume URL does not parse: %w", err)
	}
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	if u.Scheme != "s3" || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("s3volume: URL %q: want s3://bucket/prefix?endpoint=…&region=… (credentials come from the AWS environment, never the URL)", shown)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("s3volume: URL %q: its parameters do not parse", shown)
	}
	for k := range q {
		if k != "endpoint" && k != "region" {
			// Not named: a pasted secret may be the parameter's name.
			return nil, fmt.Errorf("s3volume: URL %q: a parameter other than endpoint and region (the only ones known)", shown)
		}
	}
	var loadOpts []func(*config.LoadOptions) error
	if r := q.Get("region"); r != "" {
		loadOpts = append(loadOpts, config.WithRegion(r))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3volume: loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	// Checksums only where the protocol requires them: stores that speak
	// S3 do not all know the newer checksum headers.
	cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	endpoint := q.Get("endpoint")
	if endpoint != "" {
		if eu, err := url.Parse(endpoint); err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
			return nil, fmt.Errorf("s3volume: URL %q: its endpoint is not an http(s) URL", shown)
		}
	}
	// A transport of its own, so that Close can end its idle connections.
	// No redirect is followed: Go's client turns a redirected PUT into a
	// GET, whose 200 the SDK would take for the write's, and would carry
	// the request elsewhere. A redirect is the store's answer, an *Error.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64 // the read pool's requests reuse connections
	cfg.HTTPClient = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	opts.Client = s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
	})
	opts.Bucket, opts.Prefix = u.Host, u.Path
	v, err := New(opts)
	if err != nil {
		return nil, err
	}
	v.closeIdle = tr.CloseIdleConnections
	return v, nil
}

// Close ends the idle connections of a client Open built; a
// client passed in Options is its owner's to close. The volume still
// works after Close (a request opens a new connection).
func (v *Volume) Close() error {
	if v.closeIdle != nil {
		v.closeIdle()
	}
	return nil
}

// String names the volume as s3://bucket/prefix.
func (v *Volume) String() string { return "s3://" + v.bucket + "/" + v.prefix }

// Error reports a request to the object store that failed.
type Error struct {
	Op     string // the S3 operation, e.g. "PutObject"
	Key    string // the object's key (a prefix for a listing; "" is the bucket's root)
	Status int    // the HTTP status answered, 0 when none arrived
	Err    error
	// Unavailable is true when the store was not reached, did not answer
	// within the call budget, answered 5xx, 408 or 429, or cut its 2xx
	// answer short (see the Unavailable method).
	IsUnavailable bool
}

func (e *Error) Error() string {
	status := ""
	if e.Status != 0 {
		status = fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	key := e.Key
	if key == "" { // a listing of a volume at the bucket's root
		key = "(the bucket's root)"
	}
	return fmt.Sprintf("object store: %s %s%s: %v", e.Op, key, status, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Unavailable reports whether the store could not be reached or did not
// answer: landing.IsUnavailable, and the registry's 503.
func (e *Error) Unavailable() bool { return e.IsUnavailable }

// errBadName refuses a name that is not a volume's: not fs.ValidPath, or
// holding a control character, which a listing (XML) cannot carry: it
// would be listed as another name (U+FFFD), and never deleted by one.
var errBadName = fmt.Errorf("%w: a volume name is a slash-separated relative path (fs.ValidPath) without control characters", fs.ErrInvalid)

// validName reports whether name is a volume's name.
func validName(name string) bool {
	return fs.ValidPath(name) && !strings.ContainsFunc(name, unicode.IsControl)
}

// key maps a volume name to its object key.
func (v *Volume) key(name string) string {
	if name == "." {
		return strings.TrimSuffix(v.prefix, "/")
	}
	return v.prefix + name
}

// dirPrefix is the key prefix of the directory name.
func (v *Volume) dirPrefix(name string) string {
	if name == "." {
		return v.prefix
	}
	return v.prefix + name + "/"
}

// call runs one request on the call budget and maps its error: a missing
// object is fs.ErrNotExist, everything else an *Error.
func (v *Volume) call(ctx context.Context, op, name, key string, do func(ctx context.Context) error) error {
	if !validName(name) {
		return &fs.PathError{Op: op, Path: name, Err: errBadName}
	}
	if err := ctx.Err(); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	cctx, cancel := v.clk.WithTimeout(ctx, v.budget)
	defer cancel()
	err := do(cctx)
	if err == nil {
		return nil
	}
	return v.mapErr(ctx, cctx, op, name, key, err)
}

func (v *Volume) mapErr(ctx, cctx context.Context, op, name, key string, err error) error {
	if ctx.Err() != nil { // the caller's end: the landing names the wait
		return &Error{Op: op, Key: key, Err: err}
	}
	if cctx.Err() != nil {
		return &Error{Op: op, Key: key, IsUnavailable: true,
			Err: fmt.Errorf("no answer within the call budget (%s): %w", v.budget, context.DeadlineExceeded)}
	}
	status := 0
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) || status == 404 && op != "ListObjectsV2" {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "PreconditionFailed" || status == 412 {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrExist}
	}
	// 408 and 429 are the store asking to be called again later, as 503 is.
	// A 2xx answer that could not be read was cut short (or garbled) on
	// its way: the store did not answer whole.
	unavailable := status == 0 || status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests ||
		status >= 200 && status < 300
	return &Error{Op: op, Key: key, Status: status, Err: err, IsUnavailable: unavailable}
}

// MkdirAll checks name; an object store has no directories to create.
func (v *Volume) MkdirAll(ctx context.Context, name string) error {
	if !validName(name) {
		return &fs.PathError{Op: "mkdirall", Path: name, Err: errBadName}
	}
	if err := ctx.Err(); err != nil {
		return &fs.PathError{Op: "mkdirall", Path: name, Err: err}
	}
	return nil
}

// put uploads size bytes of body from its offset start.
func (v *Volume) put(ctx context.Context, name string, body io.ReadSeeker, start, size int64, ifNoneMatch bool) error {
	key := v.key(name)
	return v.call(ctx, "PutObject", name, key, func(ctx context.Context) error {
		if _, err := body.Seek(start, io.SeekStart); err != nil {
			return err
		}
		in := &s3.PutObjectInput{Bucket: &v.bucket, Key: &key, Body: body, ContentLength: aws.Int64(size)}
		if ifNoneMatch {
			in.IfNoneMatch = aws.String("*")
		}
		_, err := v.c.PutObject(ctx, in)
		return err
	})
}

// WriteFile writes name whole (a PUT: readers see it whole or not at all).
func (v *Volume) WriteFile(ctx context.Context, name string, data []byte) error {
	return v.put(ctx, name, bytes.NewReader(data), 0, int64(len(data)), false)
}

// CreateExclusive creates name with a PUT carrying If-None-Match: *: the
// store refuses it (412 Precondition Failed) when the key exists, also
// against a concurrent PUT of the same key. A 409 (a concurrent conditional
// write in progress, which AWS S3 answers) is tried again on the same budget.
func (v *Volume) CreateExclusive(ctx context.Context, name string, data []byte) error {
	for range 3 {
		err := v.put(ctx, name, bytes.NewReader(data), 0, int64(len(data)), true)
		var ose *Error
		if errors.As(err, &ose) && ose.Status == 409 && ctx.Err() == nil {
			continue
		}
		return err
	}
	return v.put(ctx, name, bytes.NewReader(data), 0, int64(len(data)), true)
}

// WriteFrom streams r, from where it stands, to name. A seekable r (a
// bundle read from its spool file) is uploaded as it is; otherwise up to
// 1 MiB is held in memory and a longer stream is spooled to a temporary
// file first: never a whole bundle in memory.
//
// A reader whose Seek fails (an *os.File on a pipe) is read as a stream.
func (v *Volume) WriteFrom(ctx context.Context, name string, r io.Reader) error {
	if rs, ok := r.(io.ReadSeeker); ok {
		if start, err := rs.Seek(0, io.SeekCurrent); err == nil {
			end, err := rs.Seek(0, io.SeekEnd)
			if err != nil {
				return &fs.PathError{Op: "writefrom", Path: name, Err: err}
			}
			return v.put(ctx, name, rs, start, max(0, end-start), false)
		}
	}
	head := make([]byte, smallWrite+1)
	n, err := io.ReadFull(ctxReader{ctx: ctx, r: r}, head)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return v.put(ctx, name, bytes.NewReader(head[:n]), 0, int64(n), false)
	case err != nil:
		return &fs.PathError{Op: "writefrom", Path: name, Err: err}
	}
	f, err := os.CreateTemp("", "meshrx-s3-upload-*")
	if err != nil {
		return &fs.PathError{Op: "writefrom", Path: name, Err: fmt.Errorf("spool file: %w", err)}
	}
	defer func() { _ = f.Close(); _ = os.Remove(f.Name()) }()
	size, err := io.Copy(f, io.MultiReader(bytes.NewReader(head), ctxReader{ctx: ctx, r: r}))
	if err != nil {
		return &fs.PathError{Op: "writefrom", Path: name, Err: err}
	}
	return v.put(ctx, name, f, 0, size, false)
}

// maxKeyLen is the longest object key S3 holds, in bytes.
const maxKeyLen = 1024

// MaxNameLen is the longest name the volume holds: S3's key limit less
// the prefix (landing.NameLimitedVolume), so that a landing refuses an
// archive whose files would not fit before writing any of them.
func (v *Volume) MaxNameLen() int { return maxKeyLen - len(v.prefix) }

// Rename is refused: object storage has none (see ExclusiveVolume).
func (v *Volume) Rename(ctx context.Context, oldname, newname string) error {
	for _, name := range []string{oldname, newname} {
		if !validName(name) {
			return &fs.PathError{Op: "rename", Path: name, Err: errBadName}
		}
	}
	return &fs.PathError{Op: "rename", Path: oldname, Err: ErrNoRename}
}

// list lists the keys beneath prefix, a page (one request on the call
// budget) at a time; delimited lists one level.
func (v *Volume) list(ctx context.Context, name, prefix string, delimited bool, limit int32, page func(*s3.ListObjectsV2Output) bool) error {
	in := &s3.ListObjectsV2Input{Bucket: &v.bucket, Prefix: aws.String(prefix)}
	if delimited {
		in.Delimiter = aws.String("/")
	}
	if limit > 0 {
		in.MaxKeys = aws.Int32(limit)
	}
	// A store that answers a token it gave before would be listed for
	// ever; one truncated without a token would pass for the whole listing.
	seen := map[string]bool{}
	for {
		var out *s3.ListObjectsV2Output
		err := v.call(ctx, "ListObjectsV2", name, prefix, func(ctx context.Context) error {
			var err error
			out, err = v.c.ListObjectsV2(ctx, in)
			return err
		})
		if err != nil {
			return err
		}
		if !page(out) || !aws.ToBool(out.IsTruncated) {
			return nil
		}
		token := aws.ToString(out.NextContinuationToken)
		switch {
		case token == "":
			return &Error{Op: "ListObjectsV2", Key: prefix, Err: errors.New("the store said the listing is truncated but gave no continuation token")}
		case seen[token]:
			return &Error{Op: "ListObjectsV2", Key: prefix, Err: fmt.Errorf("the store repeated continuation token %q after %d pages: its listing would never end", token, len(seen)+1)}
		}
		seen[token] = true
		in.ContinuationToken = &token
	}
}

// ReadDir lists one level beneath name: sub-prefixes are directories. A
// directory with nothing beneath it does not exist (fs.ErrNotExist).
func (v *Volume) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	prefix := v.dirPrefix(name)
	var entries []fs.DirEntry
	err := v.list(ctx, name, prefix, true, 0, func(out *s3.ListObjectsV2Output) bool {
		for _, p := range out.CommonPrefixes {
			n := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(p.Prefix), prefix), "/")
			if n != "" {
				entries = append(entries, s3Info{name: n, dir: true})
			}
		}
		for _, o := range out.Contents {
			n := strings.TrimPrefix(aws.ToString(o.Key), prefix)
			if n != "" {
				entries = append(entries, s3Info{name: n, size: aws.ToInt64(o.Size), mod: aws.ToTime(o.LastModified)})
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 && name != "." {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	slices.SortStableFunc(entries, compareEntries)
	// A directory is named once: a store may repeat the common prefix a
	// page ended with at the start of the next (the test server does).
	entries = slices.CompactFunc(entries, func(a, b fs.DirEntry) bool { return a.Name() == b.Name() && a.IsDir() && b.IsDir() })
	return entries, nil
}

// ReadFile reads name whole when it holds at most max bytes (records,
// claims and journal entries: small). A larger object is a *TooLargeError,
// refused by its length before its body is read, or once max+1 bytes of a
// body longer than announced have been.
func (v *Volume) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	key := v.key(name)
	if max < 0 {
		return nil, fmt.Errorf("s3volume: read of %s with a negative bound %d", name, max)
	}
	var data []byte
	tooLarge := false
	err := v.call(ctx, "GetObject", name, key, func(ctx context.Context) error {
		out, err := v.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &v.bucket, Key: &key})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		if aws.ToInt64(out.ContentLength) > max {
			tooLarge = true
			return nil
		}
		data, err = io.ReadAll(io.LimitReader(out.Body, max+min(1, math.MaxInt64-max))) // max+1, not past MaxInt64
		tooLarge = err == nil && int64(len(data)) > max
		return err
	})
	if err == nil && tooLarge {
		return nil, &TooLargeError{Key: key, Max: max}
	}
	return data, err
}

// TooLargeError is ReadFile's refusal of an object that holds more than the
// read allows (landing.IsTooLarge reports true for it).
type TooLargeError struct {
	Key string // the object's key
	Max int64  // the read's bound, in bytes
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("s3volume: object %s holds more than the %d bytes the read allows", e.Key, e.Max)
}

// TooLarge reports true: landing.IsTooLarge.
func (e *TooLargeError) TooLarge() bool { return true }

// Stat describes the object name or, when there is none, the directory
// name: its modification time is that of the first object beneath it.
func (v *Volume) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if name != "." {
		key := v.key(name)
		var info fs.FileInfo
		err := v.call(ctx, "HeadObject", name, key, func(ctx context.Context) error {
			out, err := v.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &v.bucket, Key: &key})
			if err != nil {
				return err
			}
			info = s3Info{name: path.Base(name), size: aws.ToInt64(out.ContentLength), mod: aws.ToTime(out.LastModified)}
			return nil
		})
		if !errors.Is(err, fs.ErrNotExist) {
			return info, err
		}
	}
	var info fs.FileInfo
	err := v.list(ctx, name, v.dirPrefix(name), false, 1, func(out *s3.ListObjectsV2Output) bool {
		if len(out.Contents) > 0 {
			info = s3Info{name: path.Base(name), dir: true, mod: aws.ToTime(out.Contents[0].LastModified)}
		}
		return false
	})
	if err != nil {
		return nil, err
	}
	if info == nil {
		if name == "." {
			return s3Info{name: ".", dir: true}, nil
		}
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return info, nil
}

// RemoveAll deletes the object name and every object beneath it.
func (v *Volume) RemoveAll(ctx context.Context, name string) error {
	if name == "." {
		return &fs.PathError{Op: "removeall", Path: name, Err: fmt.Errorf("refusing to remove the volume root: %w", fs.ErrInvalid)}
	}
	key := v.key(name)
	err := v.call(ctx, "DeleteObject", name, key, func(ctx context.Context) error {
		_, err := v.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &v.bucket, Key: &key})
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var keys []string
	if err := v.list(ctx, name, v.dirPrefix(name), false, 0, func(out *s3.ListObjectsV2Output) bool {
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		return true
	}); err != nil {
		return err
	}
	for batch := range slices.Chunk(keys, 1000) {
		ids := make([]types.ObjectIdentifier, len(batch))
		for i := range batch {
			ids[i] = types.ObjectIdentifier{Key: &batch[i]}
		}
		var out *s3.DeleteObjectsOutput
		err := v.call(ctx, "DeleteObjects", name, v.dirPrefix(name), func(ctx context.Context) error {
			var err error
			out, err = v.c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &v.bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
			return err
		})
		if err != nil {
			return err
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			code := aws.ToString(e.Code)
			return &Error{Op: "DeleteObjects", Key: aws.ToString(e.Key),
				Err: fmt.Errorf("%s: %s (and %d more)", code, aws.ToString(e.Message), len(out.Errors)-1),
				// A key's 503 or 500: call again later, as for a request.
				IsUnavailable: code == "SlowDown" || code == "InternalError" || code == "ServiceUnavailable"}
		}
	}
	return nil
}

// Open streams the object name. The call budget bounds the request until
// its answer starts; the stream is then bounded by ctx, and Close ends it.
func (v *Volume) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	key := v.key(name)
	if !validName(name) {
		return nil, &fs.PathError{Op: "GetObject", Path: name, Err: errBadName}
	}
	if err := ctx.Err(); err != nil {
		return nil, &fs.PathError{Op: "GetObject", Path: name, Err: err}
	}
	sctx, cancel := context.WithCancelCause(ctx)
	tripped := v.clk.AfterFunc(v.budget, func() { cancel(context.DeadlineExceeded) })
	out, err := v.c.GetObject(sctx, &s3.GetObjectInput{Bucket: &v.bucket, Key: &key})
	if !tripped.Stop() && err == nil {
		// The budget ran out as the answer arrived: the stream is cut.
		err = context.DeadlineExceeded
		_ = out.Body.Close()
	}
	if err != nil {
		// Mapped before the request's context ends: mapErr reads an ended
		// sctx as the budget run out.
		err = v.mapErr(ctx, sctx, "GetObject", name, key, err)
		cancel(nil)
		return nil, err
	}
	return &s3Body{ReadCloser: out.Body, cancel: cancel}, nil
}

// s3Body ends its request's context when closed.
type s3Body struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
}

func (b *s3Body) Close() error {
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}

// s3Info is a listed object or prefix, as an fs.DirEntry and fs.FileInfo.
type s3Info struct {
	name string
	dir  bool
	size int64
	mod  time.Time
}

func (i s3Info) Name() string       { return i.name }
func (i s3Info) Size() int64        { return i.size }
func (i s3Info) ModTime() time.Time { return i.mod }
func (i s3Info) IsDir() bool        { return i.dir }
func (i s3Info) Sys() any           { return nil }
func (i s3Info) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i s3Info) Type() fs.FileMode          { return i.Mode().Type() }
func (i s3Info) Info() (fs.FileInfo, error) { return i, nil }

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

func compareEntries(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) }
