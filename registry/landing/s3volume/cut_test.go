package s3volume

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/registry/landing"
)

// cutShort answers the requests match picks with the store's own answer,
// its full length announced and half its body sent, the connection then
// closed: an answer cut mid-way, as a dropped connection or a proxy's
// time-out leaves it.
func cutShort(match func(*http.Request) bool) func(w http.ResponseWriter, r *http.Request, next http.Handler) {
	return func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if !match(r) {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body[:len(body)/2])
	}
}

// A 2xx answer cut mid-way (a listing, a batch delete's report) is the
// store not answering whole: unavailable (the registry's 503 with
// Retry-After), as a GetObject body cut mid-way already was, naming the
// operation and the prefix. It was an error with the status 200 that was
// not unavailable: a 500, and for the landing a definite answer. Negative
// control, run by hand: without the 2xx case in mapErr both rows were not
// unavailable ("(HTTP 200) ... unexpected EOF").
func TestAnAnswerCutMidwayIsAnOutageNamingTheOperation(t *testing.T) {
	ctx := t.Context()
	for _, row := range []struct {
		op   string
		call func(v *Volume) error
	}{
		{"ListObjectsV2", func(v *Volume) error { _, err := v.ReadDir(ctx, "d"); return err }},
		{"DeleteObjects", func(v *Volume) error { return v.RemoveAll(ctx, "d") }},
	} {
		t.Run(row.op, func(t *testing.T) {
			srv := s3test.Start(t)
			v := testVolume(t, srv, Options{Prefix: "p"})
			require.NoError(t, v.WriteFile(ctx, "d/f", []byte("x")))
			srv.Intercept(cutShort(func(r *http.Request) bool {
				q := r.URL.Query()
				switch row.op {
				case "ListObjectsV2":
					return q.Get("list-type") == "2"
				default:
					return r.Method == http.MethodPost && q.Has("delete")
				}
			}))
			err := row.call(v)
			assert.True(t, landing.IsUnavailable(err), "%v", err)
			var se *Error
			if assert.ErrorAs(t, err, &se) {
				assert.Equal(t, row.op, se.Op)
				assert.Equal(t, "p/d/", se.Key)
			}
			srv.Intercept(nil)
			require.NoError(t, row.call(v), "control: the store answering whole, the same call succeeds")
		})
	}
}

// A batch delete the store answers 200 with a per-key error is an *Error
// naming the key; one asking to be called again later (SlowDown,
// InternalError, ServiceUnavailable: AWS's per-key codes for a 503 or a
// 500) is unavailable, as the same answer to a whole request is, and a
// refusal (AccessDenied) is not. Every per-key error was not unavailable:
// a journal trim meeting a store that throttled it failed as though the
// store had refused it. Negative control, run by hand: without the codes
// read, the SlowDown and InternalError rows were not unavailable.
func TestABatchDeletesPerKeyErrorIsUnavailableWhenTheStoreAsksToBeCalledAgain(t *testing.T) {
	ctx := t.Context()
	for code, unavailable := range map[string]bool{"SlowDown": true, "InternalError": true, "ServiceUnavailable": true, "AccessDenied": false} {
		srv := s3test.Start(t)
		v := testVolume(t, srv, Options{Prefix: "p"})
		require.NoError(t, v.WriteFile(ctx, "d/f", []byte("x")))
		srv.Intercept(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			if r.Method != http.MethodPost || !r.URL.Query().Has("delete") {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/xml")
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><DeleteResult><Error><Key>p/d/f</Key><Code>`+code+`</Code><Message>m</Message></Error></DeleteResult>`)
		})
		err := v.RemoveAll(ctx, "d")
		var se *Error
		if assert.ErrorAs(t, err, &se, code) {
			assert.Equal(t, "DeleteObjects", se.Op, code)
			assert.Equal(t, "p/d/f", se.Key, code)
		}
		assert.Equal(t, unavailable, landing.IsUnavailable(err), "%s: %v", code, err)
	}
}
