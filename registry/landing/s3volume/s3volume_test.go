package s3volume

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/landing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The volume is what the landing needs on object storage.
var (
	_ landing.ExclusiveVolume = (*Volume)(nil)
	_ landing.StreamingVolume = (*Volume)(nil)
)

func testVolume(t *testing.T, srv *s3test.Server, opts Options) *Volume {
	t.Helper()
	opts.Client, opts.Bucket = srv.Client(), srv.Bucket
	v, err := New(opts)
	require.NoError(t, err)
	return v
}

// WriteFrom holds at most 1 MiB of a stream of unknown length in memory:
// a longer one goes through a temporary file, removed afterwards, and
// reads back whole through Open. Control: a short one is uploaded from
// memory and leaves no temporary file either.
func TestALongStreamIsSpooledToDiskNotMemoryAndReadsBackWhole(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	srv := s3test.Start(t)
	v := testVolume(t, srv, Options{})
	ctx := t.Context()
	for _, size := range []int{smallWrite / 2, 3 * smallWrite} {
		data := testkit.RandomBytes(size)
		spooled := make(chan []string, 1)
		r := &watchTemp{r: bytes.NewReader(data), dir: tmp, seen: spooled}
		require.NoError(t, v.WriteFrom(ctx, "big/blob", struct{ io.Reader }{r}))
		rc, err := v.Open(ctx, "big/blob")
		require.NoError(t, err)
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		assert.True(t, bytes.Equal(data, got), "size %d reads back whole", size)
		left, _ := os.ReadDir(tmp)
		assert.Empty(t, left, "no temporary file left")
		var during []string
		select {
		case during = <-spooled:
		default:
		}
		if size > smallWrite {
			assert.NotEmpty(t, during, "a long stream is spooled to a temporary file")
		} else {
			assert.Empty(t, during, "control: a short stream is not")
		}
	}
}

// watchTemp reports, at its end, the files in dir: a spool file exists while
// the stream is read into it.
type watchTemp struct {
	r    io.Reader
	dir  string
	seen chan []string
}

func (w *watchTemp) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if errors.Is(err, io.EOF) {
		entries, _ := os.ReadDir(w.dir)
		var names []string
		for _, e := range entries {
			names = append(names, filepath.Join(w.dir, e.Name()))
		}
		select {
		case w.seen <- names:
		default:
		}
	}
	return n, err
}

// A volume URL Open refuses is named without its query, user information
// or parameter values: a secret put there by mistake (an access key as a
// parameter, a password in the endpoint) is not echoed into a log.
// A URL carrying credentials is refused (they were ignored). Negative
// control (run): with the raw URL in the errors (as before), the first row
// showed the secret and the second was accepted.
func TestARefusedVolumeURLIsNamedWithoutTheSecretsItHeld(t *testing.T) {
	for _, bad := range []string{
		"s3://bucket/p?endpoint=http://x&secret_key=SECRETVALUE",
		"s3://AKIA:SECRETVALUE@bucket/p",
		"s3://bucket/p?endpoint=ftp://u:SECRETVALUE@x",
		"s3://bucket/p?endpoint=%zzSECRETVALUE",
		"s3://bucket/p?SECRETVALUE",
		"s3://bucket/pSECRETVALUE",
	} {
		_, err := Open(t.Context(), bad, Options{})
		require.Error(t, err, bad)
		assert.NotContains(t, err.Error(), "SECRETVALUE", bad)
		assert.True(t, strings.HasPrefix(err.Error(), "s3volume: "), "%s: %v", bad, err)
	}
}

func TestAnS3VolumeURLIsCheckedBeforeAnyRequest(t *testing.T) {
	for _, bad := range []string{
		"http://bucket/prefix",
		"s3:///prefix",
		"s3://bucket/prefix?endpoint=ftp://x",
		"s3://bucket/prefix?endpont=http://x",
		"s3://bucket/../x?endpoint=http://127.0.0.1:1",
	} {
		_, err := Open(t.Context(), bad, Options{})
		require.Error(t, err, bad)
		assert.True(t, strings.HasPrefix(err.Error(), "s3volume: "), "%s: %v", bad, err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	srv := s3test.Start(t)
	v, err := Open(t.Context(), srv.VolumeURL("reg/one"), Options{})
	require.NoError(t, err, "control: a good URL opens")
	t.Cleanup(func() { _ = v.Close() })
	require.NoError(t, v.WriteFile(t.Context(), "x", []byte("1")))
	_, err = testVolume(t, srv, Options{Prefix: "reg/one"}).Stat(t.Context(), "x")
	require.NoError(t, err, "the URL's path is the prefix")
	_, err = testVolume(t, srv, Options{Prefix: "reg"}).Stat(t.Context(), "x")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// A directory listing longer than a page (1,000 keys) names each
// directory once: a module listed twice was read twice and served twice by
// a derivation at 10,000 modules (10,010 served): the test server repeats
// the common prefix a page ended with at the start of the next. Control:
// the listing spans pages.
func TestADirectoryListingLongerThanAPageNamesEachDirectoryOnce(t *testing.T) {
	const dirs = 2100
	srv := s3test.Start(t)
	v := testVolume(t, srv, Options{Prefix: "p"})
	for i := range dirs {
		for _, f := range []string{"generations/g/bundle.zip", "records/r.json", "versions/1/claim.json"} {
			require.NoError(t, v.WriteFile(t.Context(), fmt.Sprintf("d/k%05d/%s", i, f), []byte("1")))
		}
	}
	before := srv.Requests()
	entries, err := v.ReadDir(t.Context(), "d")
	require.NoError(t, err)
	assert.Greater(t, srv.Requests()-before, 2, "control: more than two pages")
	names := map[string]int{}
	for _, e := range entries {
		names[e.Name()]++
	}
	assert.Equal(t, dirs, len(names))
	for n, c := range names {
		if c != 1 {
			t.Errorf("%s listed %d times", n, c)
		}
	}
	assert.Equal(t, dirs, len(entries))
}

// ReadFile takes at most one byte past its bound from an object's body,
// also when the answer does not announce its length (a chunked answer, a
// store that lies): the length is checked first, the body read through a
// limit. Negative control (run): reading the body whole, the unannounced
// case takes all 1 MiB; without the length check the announced one takes
// the bound's 1 KiB + 1 before refusing.
func TestReadFileTakesNoMoreThanOneBytePastTheBoundFromAnyAnswer(t *testing.T) {
	srv := s3test.Start(t)
	const size, bound = 1 << 20, 1 << 10
	for _, announced := range []bool{true, false} {
		t.Run(fmt.Sprintf("announced=%v", announced), func(t *testing.T) {
			tr := &bodyCounter{base: http.DefaultTransport.(*http.Transport).Clone(), hideLength: !announced}
			t.Cleanup(tr.base.CloseIdleConnections)
			opts := srv.Client().Options()
			opts.HTTPClient = &http.Client{Transport: tr}
			v, err := New(Options{Client: s3.New(opts), Bucket: srv.Bucket})
			require.NoError(t, err)
			require.NoError(t, v.WriteFile(t.Context(), "big", make([]byte, size)))

			tr.read.Store(0)
			_, err = v.ReadFile(t.Context(), "big", bound)
			require.True(t, landing.IsTooLarge(err), "%v", err)
			var tl *TooLargeError
			require.ErrorAs(t, err, &tl)
			assert.EqualValues(t, bound, tl.Max)
			if announced {
				assert.Zero(t, tr.read.Load(), "refused by its length, unread")
			} else {
				assert.LessOrEqual(t, tr.read.Load(), int64(bound+1), "bytes taken from the body")
			}

			got, err := v.ReadFile(t.Context(), "big", size)
			require.NoError(t, err, "control: the same object within the bound")
			assert.Len(t, got, size)
		})
	}
}

// bodyCounter counts the bytes read from GetObject answers' bodies and,
// with hideLength, removes their announced length.
type bodyCounter struct {
	base       *http.Transport
	hideLength bool
	read       atomic.Int64
}

func (b *bodyCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(r)
	if err != nil || r.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	if b.hideLength {
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	resp.Body = countedBody{ReadCloser: resp.Body, n: &b.read}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// A store that asks to be called again later (5xx, and 408 and 429, which
// stores that rate-limit answer) is unavailable: the landing fails the
// read and the registry answers 503 with Retry-After. A refusal or a bad
// request is not. Negative control (run): with 5xx alone unavailable, the
// 408 and 429 rows fail.
func TestAStoreAskingToBeCalledAgainLaterIsUnavailableAndARefusalIsNot(t *testing.T) {
	srv := s3test.Start(t)
	for status, want := range map[int]bool{
		http.StatusRequestTimeout: true, http.StatusTooManyRequests: true,
		http.StatusInternalServerError: true, http.StatusServiceUnavailable: true,
		http.StatusForbidden: false, http.StatusBadRequest: false,
	} {
		opts := srv.Client().Options()
		opts.HTTPClient = &http.Client{Transport: cannedStatus(status)}
		opts.RetryMaxAttempts = 1 // the SDK's retries would sleep in real time
		v, err := New(Options{Client: s3.New(opts), Bucket: srv.Bucket})
		require.NoError(t, err)
		_, err = v.ReadFile(t.Context(), "a", 10)
		assert.Equal(t, want, landing.IsUnavailable(err), "%d: %v", status, err)
		var se *Error
		if assert.ErrorAs(t, err, &se) {
			assert.Equal(t, status, se.Status)
		}
	}
}

// cannedStatus answers every request with its status and an S3 error.
type cannedStatus int

func (c cannedStatus) RoundTrip(r *http.Request) (*http.Response, error) {
	body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>Canned</Code><Message>canned</Message></Error>`
	return &http.Response{
		StatusCode: int(c), Status: http.StatusText(int(c)), Request: r, ContentLength: int64(len(body)),
		Header: http.Header{"Content-Type": {"application/xml"}}, Body: io.NopCloser(strings.NewReader(body)),
	}, nil
}

// An error names what was waited on also when that is a listing of the
// whole bucket (a volume without a prefix): the key was empty, and the
// message named nothing ("ListObjectsV2  (HTTP 503)"). Negative control,
// run by hand: without the case in Error, the message held no name.
func TestAnErrorListingTheBucketsRootNamesIt(t *testing.T) {
	srv := s3test.Start(t)
	opts := srv.Client().Options()
	opts.HTTPClient = &http.Client{Transport: cannedStatus(http.StatusServiceUnavailable)}
	opts.RetryMaxAttempts = 1
	v, err := New(Options{Client: s3.New(opts), Bucket: srv.Bucket})
	require.NoError(t, err)
	_, err = v.ReadDir(t.Context(), ".")
	var se *Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "", se.Key)
	assert.Contains(t, err.Error(), "object store: ListObjectsV2 (the bucket's root) (HTTP 503)")
	_, err = v.ReadDir(t.Context(), "d")
	assert.Contains(t, err.Error(), "object store: ListObjectsV2 d/ (HTTP 503)", "control: a prefix is named as it is")
}

// Open names the store's answer as ReadFile does: a refusal (403: the
// credentials expired) is an *Error with its status, not unavailable; a
// 503 is unavailable with its status; neither is a call budget run out.
// Every failed Open was "no answer within the call budget", with no
// status: an operator looked for a slow store while the credentials were
// refused. Negative control, run by hand: with the request's context
// ended before mapErr (as it was), every row failed with that message.
func TestOpenNamesTheStoresAnswerNotABudgetRunOut(t *testing.T) {
	srv := s3test.Start(t)
	for status, unavailable := range map[int]bool{http.StatusForbidden: false, http.StatusServiceUnavailable: true} {
		opts := srv.Client().Options()
		opts.HTTPClient = &http.Client{Transport: cannedStatus(status)}
		opts.RetryMaxAttempts = 1
		v, err := New(Options{Client: s3.New(opts), Bucket: srv.Bucket})
		require.NoError(t, err)
		_, err = v.Open(t.Context(), "bundle.zip")
		var se *Error
		if assert.ErrorAs(t, err, &se, status) {
			assert.Equal(t, status, se.Status)
			assert.Equal(t, "bundle.zip", se.Key)
		}
		assert.NotContains(t, err.Error(), "call budget", status)
		assert.Equal(t, unavailable, landing.IsUnavailable(err), "%d: %v", status, err)
	}
}

// A prefix is held to the rule of a volume's names: one holding a control
// character is refused by New (and so by Open, whose URL's path it is)
// with an *OptionsError, before any request; every key beneath it would
// be listed as another (U+FFFD). Negative control, run by hand: with
// fs.ValidPath alone (as it was), both were accepted.
func TestAPrefixHoldingAControlCharacterIsRefused(t *testing.T) {
	srv := s3test.Start(t)
	_, err := New(Options{Client: srv.Client(), Bucket: srv.Bucket, Prefix: "reg\x00istry"})
	var oe *OptionsError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "Options.Prefix", oe.Setting)
	_, err = Open(t.Context(), "s3://bucket/reg%0Aistry?endpoint="+srv.URL, Options{})
	require.ErrorAs(t, err, &oe)
	before := srv.Requests()
	_, err = New(Options{Client: srv.Client(), Bucket: srv.Bucket, Prefix: "reg istry/ü"})
	require.NoError(t, err, "control: a space and a letter are a prefix")
	assert.Equal(t, before, srv.Requests(), "no request")
}
