package s3test

import (
	"io"
	"strings"
	"sync"

	"github.com/johannesboyne/gofakes3"
	"github.com/ryszard/goskiplist/skiplist"
)

// indexed is a gofakes3.Backend over another (s3mem) that answers a
// listing by seeking in a sorted index of the bucket's keys, so that a
// listing costs what it returns rather than a walk of the bucket.
// gofakes3 v1.2.0's s3mem walks every object after the marker for every
// ListBucket, skipping those outside the prefix: a landing that lists
// each module's records would cost modules × objects (issue #24: the
// load program at 10,000 modules did not finish).
//
// Storage, conditional creates (If-None-Match: * is checked by s3mem
// under its lock, unchanged) and every other call are the inner
// backend's. The answer of a listing is the inner backend's, quirks
// included (e.g. a page ending on a common prefix sets NextMarker to the
// key it was found at, and IsTruncated says whether any key follows in
// the bucket): each listed object's entry is read from the inner backend
// by a one-key listing that seeks to it. Listings the index cannot
// answer exactly (no prefix, a delimiter other than "/", a prefix or a
// key beginning with the delimiter) are the inner backend's walk.
//
// The index holds keys only. After every call that writes or deletes a
// key, the key's presence is read back from the inner backend under the
// index's lock, so the index agrees with the store once the call returns
// whatever the order of concurrent writes. Versioned buckets are not
// offered (the landing uses none).
type indexed struct {
	gofakes3.Backend

	mu   sync.Mutex
	keys map[string]*skiplist.SkipList // bucket → set of keys (values unused)
}

func newIndexed(inner gofakes3.Backend) *indexed {
	return &indexed{Backend: inner, keys: map[string]*skiplist.SkipList{}}
}

func (b *indexed) CreateBucket(name string) error {
	if err := b.Backend.CreateBucket(name); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keys[name] = skiplist.NewStringMap()
	return nil
}

func (b *indexed) DeleteBucket(name string) error {
	err := b.Backend.DeleteBucket(name)
	b.dropIfGone(name)
	return err
}

func (b *indexed) ForceDeleteBucket(name string) error {
	err := b.Backend.ForceDeleteBucket(name)
	b.dropIfGone(name)
	return err
}

func (b *indexed) dropIfGone(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ok, err := b.Backend.BucketExists(name); err == nil && !ok {
		delete(b.keys, name)
	}
}

func (b *indexed) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, conditions *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	r, err := b.Backend.PutObject(bucket, key, meta, input, size, conditions)
	b.sync(bucket, key)
	return r, err
}

// CopyObject copies through this backend, so that the index sees the put.
func (b *indexed) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	return gofakes3.CopyObject(b, srcBucket, srcKey, dstBucket, dstKey, meta)
}

func (b *indexed) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	r, err := b.Backend.DeleteObject(bucket, key)
	b.sync(bucket, key)
	return r, err
}

func (b *indexed) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	r, err := b.Backend.DeleteMulti(bucket, keys...)
	b.sync(bucket, keys...)
	return r, err
}

// sync reads back whether each key exists and records it, under the
// index's lock: the last sync of a key reads the store's final state.
func (b *indexed) sync(bucket string, keys ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	idx := b.keys[bucket]
	if idx == nil {
		return
	}
	for _, k := range keys {
		if _, err := b.Backend.HeadObject(bucket, k); err == nil {
			idx.Set(k, nil)
		} else if gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey) {
			idx.Delete(k)
		}
	}
}

func (b *indexed) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	plan, ok := b.plan(name, prefix, page)
	if !ok {
		return b.Backend.ListBucket(name, prefix, page)
	}
	out := gofakes3.NewObjectList()
	for _, e := range plan.entries {
		if e.commonPrefix != "" {
			out.AddPrefix(e.commonPrefix)
			continue
		}
		c, err := b.entry(name, e.key)
		if err != nil {
			return nil, err
		}
		if c != nil { // nil: deleted since the plan
			out.Add(c)
		}
	}
	out.NextMarker, out.IsTruncated = plan.nextMarker, plan.truncated
	return out, nil
}

type planned struct {
	key, commonPrefix string
}

type listPlan struct {
	entries    []planned
	nextMarker string
	truncated  bool
	seeks      int // index seeks: the listing's cost
}

// plan walks the index from the first key after the marker within the
// prefix, as s3mem's ListBucket walks its objects, but jumps over the
// keys under a common prefix and stops where the prefix's keys end.
func (b *indexed) plan(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (listPlan, bool) {
	var p listPlan
	if prefix == nil || !prefix.HasPrefix || prefix.Prefix == "" {
		return p, false
	}
	delim := prefix.HasDelimiter
	if delim && prefix.Delimiter != "/" {
		return p, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	idx := b.keys[name]
	if idx == nil {
		return p, false
	}
	after := func(k string) (string, bool) { // the first key ≥ k
		p.seeks++
		got, _, ok := idx.GetGreaterOrEqual(k)
		if !ok {
			return "", false
		}
		return got.(string), true
	}
	if delim {
		// gofakes3 trims leading delimiters before matching: such keys
		// match prefixes they do not begin with.
		if strings.HasPrefix(prefix.Prefix, "/") {
			return p, false
		}
		if k, ok := after("/"); ok && strings.HasPrefix(k, "/") {
			return p, false
		}
	}
	from := prefix.Prefix
	if page.Marker != "" && page.Marker+"\x00" > from {
		from = page.Marker + "\x00"
	}
	var count int64
	for k, ok := after(from); ok && strings.HasPrefix(k, prefix.Prefix); k, ok = after(from) {
		from = k + "\x00"
		// A key ending at its first delimiter past the prefix is itself
		// listed, as s3mem lists it, not as a common prefix.
		if i := strings.IndexByte(k[len(prefix.Prefix):], '/'); delim && i >= 0 && len(prefix.Prefix)+i+1 < len(k) {
			cp := k[:len(prefix.Prefix)+i+1]
			p.entries = append(p.entries, planned{commonPrefix: cp})
			from = cp[:len(cp)-1] + "0" // past every key beginning with cp ('0' follows '/')
		} else {
			p.entries = append(p.entries, planned{key: k})
		}
		count++
		if page.MaxKeys > 0 && count >= page.MaxKeys {
			p.nextMarker = k
			_, p.truncated = after(k + "\x00")
			break
		}
	}
	return p, true
}

// entry is the inner backend's listing entry for key: a one-key listing
// seeking to just before it. Nil when the key is gone.
func (b *indexed) entry(bucket, key string) (*gofakes3.Content, error) {
	pre := gofakes3.Prefix{HasPrefix: true, Prefix: key}
	l, err := b.Backend.ListBucket(bucket, &pre, gofakes3.ListBucketPage{Marker: justBefore(key), HasMarker: true, MaxKeys: 1})
	if err != nil {
		return nil, err
	}
	if len(l.Contents) == 1 && l.Contents[0].Key == key {
		return l.Contents[0], nil
	}
	return nil, nil
}

// justBefore is a marker less than key with no UTF-8 key between it and
// key (its last byte one less, then 0xff, which UTF-8 never holds), so
// that a listing after it starts at key. A key with another byte between
// is skipped by the one-key listing's prefix, at the cost of a step.
func justBefore(key string) string {
	n := len(key) - 1
	if key[n] == 0 {
		return key[:n]
	}
	return key[:n] + string([]byte{key[n] - 1, 0xff})
}
