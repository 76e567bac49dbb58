package s3test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twin returns s3mem (the reference) and the indexed backend over another
// s3mem, both with bucket b holding keys, on one fixed clock so that their
// entries' times agree.
func twin(t testing.TB, keys ...string) (ref gofakes3.Backend, ix *indexed) {
	t.Helper()
	ts := gofakes3.FixedTimeSource(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	ref, ix = s3mem.New(s3mem.WithTimeSource(ts)), newIndexed(s3mem.New(s3mem.WithTimeSource(ts)))
	for _, be := range []gofakes3.Backend{ref, ix} {
		require.NoError(t, be.CreateBucket("b"))
		for _, k := range keys {
			_, err := be.PutObject("b", k, map[string]string{}, strings.NewReader("body of "+k), int64(len("body of "+k)), nil)
			require.NoError(t, err)
		}
	}
	return ref, ix
}

var layoutKeys = []string{
	"modules/a/versions/1/claim.json", "modules/a/records/r1.json", "modules/a/records/r2.json",
	"modules/a/generations/g1/bundle.zip", "modules/a/generations/g1/files/x/y.go",
	"modules/ab/records/r1.json", "modules/a.json", "modules/b/records/r1.json",
	"modules/b/versions/1/claim.json", "modules", "modules/", "modules//odd", "modules/c",
	"journal/0001/1/entry.json", "journal/0001/2/entry.json", "journal/0002/1/entry.json",
	"x", "xy/z", "zzz/1", "gone/1", "gone/2", "gone/3",
	"p/0a/1", "p/0b", "p/1", "p/1\x00", "p/\x00", "p/é", "p/é/1",
}

// The indexed backend's listings are s3mem's, page by page, for every
// prefix, delimiter and page size in the table, following NextMarker to
// the end, after deletes by DeleteObject and DeleteMulti. The reference
// is the unwrapped s3mem; the control below shows the comparison tells a
// stale index from a fresh one.
func TestTheIndexedListingAgreesWithS3memOnPrefixesDelimitersAndPages(t *testing.T) {
	ref, ix := twin(t, layoutKeys...)
	for _, be := range []gofakes3.Backend{ref, ix} {
		_, err := be.DeleteObject("b", "gone/2")
		require.NoError(t, err)
		_, err = be.DeleteMulti("b", "gone/1", "gone/3")
		require.NoError(t, err)
		_, err = be.PutObject("b", "gone/1", map[string]string{}, strings.NewReader("back"), 4, nil)
		require.NoError(t, err)
	}
	slash := "/"
	prefixes := []string{"modules/", "modules", "modules/a", "modules/a/", "modules/a/records/",
		"modules/b/", "journal/", "journal/0001/", "x", "gone/", "m", "nothing/", "zzz/1", "p/", "p"}
	compared := 0
	for _, pre := range prefixes {
		for _, delim := range []*string{nil, &slash} {
			for _, max := range []int64{0, 1, 2, 3, 1000} {
				pre := pre
				p := gofakes3.NewPrefix(&pre, delim)
				page := gofakes3.ListBucketPage{MaxKeys: max}
				for i := 0; ; i++ {
					require.Less(t, i, 100, "%v max %d: pagination does not end", p, max)
					want, err := ref.ListBucket("b", &p, page)
					require.NoError(t, err)
					plan, fast := ix.plan("b", &p, page)
					got, err := ix.ListBucket("b", &p, page)
					require.NoError(t, err)
					require.Equal(t, want, got, "%v max %d marker %q", p, max, page.Marker)
					assert.True(t, fast, "%v: answered from the index", p)
					assert.LessOrEqual(t, plan.seeks, len(got.Contents)+len(got.CommonPrefixes)+2, "%v: one seek per entry, one past them, one for the delimiter check", p)
					compared++
					if !got.IsTruncated {
						break
					}
					page.Marker, page.HasMarker = got.NextMarker, true
				}
			}
		}
	}
	t.Logf("%d pages compared", compared)

	// Control: a key written behind the index's back (to the inner
	// backend, as no caller can) is missing from the indexed listing, and
	// the comparison sees it.
	for _, be := range []gofakes3.Backend{ref, ix.Backend} {
		_, err := be.PutObject("b", "modules/a/records/r3.json", map[string]string{}, strings.NewReader("v"), 1, nil)
		require.NoError(t, err)
	}
	p := gofakes3.NewFolderPrefix("modules/a/records/")
	want, err := ref.ListBucket("b", &p, gofakes3.ListBucketPage{})
	require.NoError(t, err)
	got, err := ix.ListBucket("b", &p, gofakes3.ListBucketPage{})
	require.NoError(t, err)
	assert.NotEqual(t, want, got, "control: a stale index disagrees")
	assert.Len(t, got.Contents, 2)
	assert.Len(t, want.Contents, 3)

	// The listings the index does not answer (no prefix; a key beginning
	// with the delimiter) are s3mem's walk, and agree too.
	for _, be := range []gofakes3.Backend{ref, ix} {
		_, err := be.PutObject("b", "/lead/1", map[string]string{}, strings.NewReader("v"), 1, nil)
		require.NoError(t, err)
	}
	for _, pre := range []string{"", "lead/", "modules/"} {
		pre := pre
		p := gofakes3.NewPrefix(&pre, &slash)
		if pre == "" {
			p = gofakes3.Prefix{}
		}
		want, err := ref.ListBucket("b", &p, gofakes3.ListBucketPage{})
		require.NoError(t, err)
		got, err := ix.ListBucket("b", &p, gofakes3.ListBucketPage{})
		require.NoError(t, err)
		require.Equal(t, want, got, "%v", p)
		_, fast := ix.plan("b", &p, gofakes3.ListBucketPage{})
		assert.False(t, fast, "%v is the walk's", p)
	}
}

// In a bucket of 10,000 modules (60,000 objects), listing one module's
// records seeks the index once per record returned (plus the seek that
// finds the end), and listing the modules under a delimiter once per
// module: the walk of s3mem visits every object after the prefix
// (BenchmarkAPrefixListing measures both).
func TestAPrefixListingSeeksOncePerEntryNotPerObject(t *testing.T) {
	_, ix := twin(t)
	fill(t, ix, 10_000)
	p := gofakes3.NewFolderPrefix("modules/m05000/records/")
	plan, ok := ix.plan("b", &p, gofakes3.ListBucketPage{})
	require.True(t, ok)
	assert.Len(t, plan.entries, 3)
	assert.Equal(t, 5, plan.seeks, "3 records, the seek past them, and the check for a key beginning with the delimiter")

	p = gofakes3.NewFolderPrefix("modules/")
	plan, ok = ix.plan("b", &p, gofakes3.ListBucketPage{MaxKeys: 1000})
	require.True(t, ok)
	assert.Len(t, plan.entries, 1000)
	assert.Equal(t, 1002, plan.seeks, "a seek per common prefix, one for IsTruncated, one for the delimiter check")
	assert.True(t, plan.truncated)
}

// fill lands n modules of six objects each, straight into the inner
// backend and the index (the layout of the landing's volume).
func fill(tb testing.TB, be gofakes3.Backend, n int) {
	tb.Helper()
	for i := range n {
		m := fmt.Sprintf("modules/m%05d/", i)
		for _, k := range []string{"versions/1/claim.json", "records/r1.json", "records/r2.json", "records/r3.json",
			"generations/g1/bundle.zip", "generations/g1/files/a.go"} {
			_, err := be.PutObject("b", m+k, map[string]string{}, strings.NewReader("v"), 1, nil)
			require.NoError(tb, err)
		}
	}
}

// BenchmarkAPrefixListing lists one module's records in a bucket of
// 10,000 modules on s3mem (walks every object after the prefix) and on
// the indexed backend (seeks).
func BenchmarkAPrefixListing(b *testing.B) {
	ref, ix := twin(b)
	fill(b, ref, 10_000)
	fill(b, ix, 10_000)
	p := gofakes3.NewFolderPrefix("modules/m00100/records/")
	for _, c := range []struct {
		name string
		be   gofakes3.Backend
	}{{"s3mem", ref}, {"indexed", ix}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				l, err := c.be.ListBucket("b", &p, gofakes3.ListBucketPage{})
				if err != nil || len(l.Contents) != 3 {
					b.Fatalf("%v %v", l, err)
				}
			}
		})
	}
}
