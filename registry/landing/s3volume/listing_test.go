package s3volume

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
)

// isListing reports whether r is a ListObjectsV2 request.
func isListing(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2"
}

// smallPages makes every listing answer pages of n keys, as a store does
// past 1,000, and runs rewrite (if any) on the request first and on each
// answer's body after. It refuses listings past the 20th (403), so that a
// volume that does not stop listing ends all the same.
func smallPages(srv *s3test.Server, n int, rewriteReq func(*http.Request), rewriteBody func([]byte) []byte) *atomic.Int32 {
	listings := new(atomic.Int32)
	srv.Intercept(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if !isListing(r) {
			next.ServeHTTP(w, r)
			return
		}
		if listings.Add(1) > 20 {
			http.Error(w, "too many listings", http.StatusForbidden)
			return
		}
		q := r.URL.Query()
		q.Set("max-keys", strconv.Itoa(n))
		r.URL.RawQuery = q.Encode()
		if rewriteReq != nil {
			rewriteReq(r)
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rewriteBody != nil {
			body = rewriteBody(body)
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
	return listings
}

// A listing that pages by continuation tokens is read whole, in order,
// by ReadDir, Stat and RemoveAll; one whose store repeats a token (it
// answers the same page again) or says it is truncated without a token
// is an *Error naming the listing's prefix, after a bounded number of
// requests, not a listing that never ends or a partial one taken for the
// whole (a module missing from the activation; a RemoveAll that left
// objects behind and said it was done). Negative control, run by hand:
// without the checks in list, the repeating store was listed until the
// test's server refused its 21st request (403), and the tokenless one
// answered ReadDir with its first page and no error.
func TestAListingWhoseStoreRepeatsATokenOrDropsItFailsNamingThePrefix(t *testing.T) {
	ctx := t.Context()
	write := func(v *Volume) {
		for i := range 5 {
			require.NoError(t, v.WriteFile(ctx, fmt.Sprintf("d/f%d", i), []byte("x")))
		}
	}
	t.Run("control: pages of two keys are read whole", func(t *testing.T) {
		srv := s3test.Start(t)
		v := testVolume(t, srv, Options{Prefix: "p"})
		write(v)
		listings := smallPages(srv, 2, nil, nil)
		entries, err := v.ReadDir(ctx, "d")
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		assert.Equal(t, []string{"f0", "f1", "f2", "f3", "f4"}, names)
		assert.EqualValues(t, 3, listings.Load())
		require.NoError(t, v.RemoveAll(ctx, "d"))
		srv.Intercept(nil)
		_, err = v.ReadDir(ctx, "d")
		require.ErrorIs(t, err, fs.ErrNotExist, "RemoveAll removed every page")
	})
	for name, fault := range map[string]struct {
		req  func(*http.Request)
		body func([]byte) []byte
		want string
	}{
		"a repeated token": {req: func(r *http.Request) {
			q := r.URL.Query()
			q.Del("continuation-token") // the first page, and its token, again
			r.URL.RawQuery = q.Encode()
		}, want: "repeated"},
		"a truncated page without a token": {body: func(b []byte) []byte {
			return regexp.MustCompile(`<NextContinuationToken>[^<]*</NextContinuationToken>`).ReplaceAll(b, nil)
		}, want: "no continuation token"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := s3test.Start(t)
			v := testVolume(t, srv, Options{Prefix: "p"})
			write(v)
			listings := smallPages(srv, 2, fault.req, fault.body)
			for op, call := range map[string]func() error{
				"ReadDir":   func() error { _, err := v.ReadDir(ctx, "d"); return err },
				"RemoveAll": func() error { return v.RemoveAll(ctx, "d") },
			} {
				listings.Store(0)
				err := call()
				var se *Error
				require.ErrorAs(t, err, &se, "%s", op)
				assert.Equal(t, "ListObjectsV2", se.Op, op)
				assert.Equal(t, "p/d/", se.Key, op)
				assert.Contains(t, err.Error(), fault.want, op)
				assert.LessOrEqual(t, listings.Load(), int32(2), "%s: requests", op)
			}
			srv.Intercept(nil)
			entries, err := v.ReadDir(ctx, "d")
			require.NoError(t, err)
			assert.Len(t, entries, 5, "a failed RemoveAll said so; the objects are there")
		})
	}
}
