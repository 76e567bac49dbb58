package client

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/meshrx/meshrx/registry/landing"
)

// The settings a consumer reads its registry from (see OptionsFromEnv).
const (
	URLSetting         = "MESHRX_REGISTRY_URL"
	InstanceKeySetting = "MESHRX_INSTANCE_KEY"
)

// Defaults for Options fields left zero.
const (
	DefaultAttempts        = 3
	DefaultAttemptTimeout  = 30 * time.Second  // above the registry's IndexBudget
	DefaultDownloadTimeout = 120 * time.Second // above the registry's DownloadBudget
	DefaultMaxRetryWait    = 30 * time.Second
	DefaultPublishTimeout  = 120 * time.Second // above the registry's publish budget
	DefaultMaxPublishBytes = landing.DefaultMaxArchive
)

// Size limits on what the client reads from the registry.
const (
	maxIndexBytes     = 64 << 20 // 100,000 modules list in about 18 MB
	maxErrorBodyBytes = 4 << 10
)

// ErrNotModified is returned by Client.Index when the registry answers 304:
// the index is the one the given ETag names.
var ErrNotModified = errors.New("registry: index not modified")

// Options configures a Client.
type Options struct {
	// BaseURL is the registry's absolute http(s) URL, e.g.
	// "https://registry.example.com"; the API paths are appended to it.
	BaseURL string
	// Key is the instance key, sent as a bearer token by Index and
	// Download. It may be empty only when PublishToken is set.
	Key string
	// PublishToken is the registry's publish token, sent by Publish.
	PublishToken string
	// Attempts bounds the requests made for one call. Default 3.
	Attempts int
	// AttemptTimeout bounds one attempt at the index, from connecting to
	// reading the whole body. Default 30s.
	AttemptTimeout time.Duration
	// DownloadTimeout bounds one attempt at a bundle download, including
	// reading its body. Default 120s.
	DownloadTimeout time.Duration
	// PublishTimeout bounds one attempt at a publication, including sending
	// the bundle. Default 120s.
	PublishTimeout time.Duration
	// MaxPublishBytes bounds the copy Publish keeps of a bundle given as a
	// plain io.Reader, so that it can be sent again after a 503. Default
	// DefaultMaxPublishBytes, the registry's default cap.
	MaxPublishBytes int64
	// MaxRetryWait caps the wait before a retry, whatever Retry-After asks.
	// Default 30s.
	MaxRetryWait time.Duration
	// Logger receives a debug line per attempt; nil means slog.Default().
	// Failures are reported by the returned errors, not logged.
	Logger *slog.Logger
	// HTTPClient makes the requests; nil means a client of its own. Its
	// Timeout is replaced by the attempt timeouts, and its CheckRedirect
	// is asked only about redirects within the registry's origin.
	HTTPClient *http.Client
}

// ConfigError reports a setting or option that cannot be used. Setting names
// it as an operator would look for it.
type ConfigError struct {
	Setting string // e.g. URLSetting
	Value   string // the value refused; never a secret
	Problem string // e.g. "is set but empty"
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("registry: %s %s", e.Setting, e.Problem)
	}
	return fmt.Sprintf("registry: %s %s: %q", e.Setting, e.Problem, e.Value)
}

// HTTPError reports a call the registry refused: a status that is not
// retried, or the last status once the attempts were used up.
type HTTPError struct {
	Method     string // "" means GET
	URL        string
	Status     int
	RetryAfter time.Duration // what the last answer asked for, if anything
	Body       string        // the start of the last answer's body
	Attempts   int
}

func (e *HTTPError) Error() string {
	var b strings.Builder
	method := e.Method
	if method == "" {
		method = http.MethodGet
	}
	fmt.Fprintf(&b, "registry: %s %s answered %d %s after %d attempt(s)", method, e.URL, e.Status, http.StatusText(e.Status), e.Attempts)
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (Retry-After %s)", e.RetryAfter)
	}
	if e.Body != "" {
		fmt.Fprintf(&b, ": %s", e.Body)
	}
	return b.String()
}

// TransportError reports a call that got no answer to its last attempt: the
// connection failed, an attempt timed out, or the context ended.
type TransportError struct {
	Method   string // "" means GET
	URL      string
	Attempts int
	Err      error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("registry: %s %s: no answer after %d attempt(s): %v", cmp.Or(e.Method, http.MethodGet), e.URL, e.Attempts, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// RedirectLoopError reports a call whose redirects, all within the
// registry's origin, did not end: it was given up after Redirects of them.
// It is not retried.
type RedirectLoopError struct {
	Method    string // "" means GET
	URL       string // the URL the call asked for
	Last      string // where the last redirect pointed
	Redirects int
}

func (e *RedirectLoopError) Error() string {
	return fmt.Sprintf("registry: %s %s: redirect loop: stopped after %d redirects, the last to %s", cmp.Or(e.Method, http.MethodGet), e.URL, e.Redirects, e.Last)
}

// ResponseError reports an answer the client could not use.
type ResponseError struct {
	Method string // "" means GET
	URL    string
	Reason string
	Err    error
}

func (e *ResponseError) Error() string {
	method := cmp.Or(e.Method, http.MethodGet)
	if e.Err == nil {
		return fmt.Sprintf("registry: %s %s: %s", method, e.URL, e.Reason)
	}
	return fmt.Sprintf("registry: %s %s: %s: %v", method, e.URL, e.Reason, e.Err)
}

func (e *ResponseError) Unwrap() error { return e.Err }

// Client reads a registry's bundle index and downloads its bundles. Every
// call makes a bounded number of attempts, each with its own timeout, and
// waits before a retry for what the registry asked in Retry-After (capped).
// Statuses other than 429 and 5xx are not retried. A redirect is followed
// only within the registry's origin (scheme, host and port), so the key
// goes nowhere else; any other is an *HTTPError with its 3xx, and redirects
// that do not end are a *RedirectLoopError. A Client is
// safe for concurrent use.
type Client struct {
	base         *url.URL
	key          string
	publishToken string
	maxPublish   int64
	index        *retryablehttp.Client
	download     *retryablehttp.Client
	publish      *retryablehttp.Client
	transport    *http.Client
	logger       *slog.Logger

	mu   sync.Mutex
	last *heldIndex // the last index fetched and verified: deltas are asked since it
}

// The Options fields New names in its errors.
const (
	optionBaseURL = "client.Options.BaseURL"
	optionKey     = "client.Options.Key"
)

// New returns a Client for opts, or a *ConfigError naming the setting
// that is missing or unusable.
//
// Errors name the Options field (client.Options.BaseURL); the environment
// variables are named only by OptionsFromEnv, where the values come from.
func New(opts Options) (*Client, error) {
	base, err := parseBaseURL(opts.BaseURL, optionBaseURL, optionKey)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(opts.Key) == "" && strings.TrimSpace(opts.PublishToken) == "" {
		return nil, &ConfigError{Setting: optionKey, Problem: "is empty (and so is client.Options.PublishToken; set the instance key, or the publish token to only publish)"}
	}
	if opts.MaxPublishBytes < 0 {
		return nil, &ConfigError{Setting: "client.Options.MaxPublishBytes", Value: strconv.FormatInt(opts.MaxPublishBytes, 10), Problem: "is negative"}
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"AttemptTimeout", opts.AttemptTimeout}, {"DownloadTimeout", opts.DownloadTimeout}, {"PublishTimeout", opts.PublishTimeout}, {"MaxRetryWait", opts.MaxRetryWait}} {
		if d.value < 0 {
			return nil, &ConfigError{Setting: "client.Options." + d.name, Value: d.value.String(), Problem: "is negative"}
		}
	}
	if opts.Attempts < 0 {
		return nil, &ConfigError{Setting: "client.Options.Attempts", Value: strconv.Itoa(opts.Attempts), Problem: "is negative"}
	}
	attempts := orDefault(opts.Attempts, DefaultAttempts)
	maxWait := orDefault(opts.MaxRetryWait, DefaultMaxRetryWait)
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: newTransport()}
	}
	c := &Client{base: base, key: opts.Key, publishToken: opts.PublishToken, transport: hc, logger: logger,
		maxPublish: orDefault(opts.MaxPublishBytes, DefaultMaxPublishBytes)}
	c.index = newRetrying(hc, orDefault(opts.AttemptTimeout, DefaultAttemptTimeout), attempts, maxWait, logger)
	c.download = newRetrying(hc, orDefault(opts.DownloadTimeout, DefaultDownloadTimeout), attempts, maxWait, logger)
	c.publish = newRetrying(hc, orDefault(opts.PublishTimeout, DefaultPublishTimeout), attempts, maxWait, logger)
	return c, nil
}

// OptionsFromEnv reads the registry URL and instance key with lookup
// (os.LookupEnv in production). A setting present with an empty value counts
// as missing, and the error says which one is empty.
func OptionsFromEnv(lookup func(string) (string, bool)) (Options, error) {
	read := func(setting string) (string, error) {
		v, ok := lookup(setting)
		switch {
		case !ok:
			return "", &ConfigError{Setting: setting, Problem: "is not set"}
		case strings.TrimSpace(v) == "":
			return "", &ConfigError{Setting: setting, Problem: "is set but empty"}
		}
		return strings.TrimSpace(v), nil
	}
	base, err := read(URLSetting)
	if err != nil {
		return Options{}, err
	}
	if _, err := parseBaseURL(base, URLSetting, InstanceKeySetting); err != nil {
		return Options{}, err
	}
	key, err := read(InstanceKeySetting)
	if err != nil {
		return Options{}, err
	}
	return Options{BaseURL: base, Key: key}, nil
}

// parseBaseURL accepts only an absolute http or https URL with a host: an
// empty or relative base would turn every call into a request for a path
// on no server. setting names where raw came from in errors, keySetting
// where the key belongs instead of in the URL.
func parseBaseURL(raw, setting, keySetting string) (*url.URL, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		problem := "is empty"
		if raw != "" {
			problem = "is blank (whitespace only)"
		}
		return nil, &ConfigError{Setting: setting, Problem: problem}
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, &ConfigError{Setting: setting, Value: s, Problem: "is not a URL (" + err.Error() + ")"}
	}
	if !u.IsAbs() || u.Host == "" {
		return nil, &ConfigError{Setting: setting, Value: s, Problem: "is not an absolute URL (it needs http:// or https:// and a host)"}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, &ConfigError{Setting: setting, Value: s, Problem: "is not an http or https URL"}
	}
	if u.User != nil {
		return nil, &ConfigError{Setting: setting, Value: u.Redacted(), Problem: "carries credentials; the key belongs in " + keySetting}
	}
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// Index fetches the bundle index. With a non-empty etag it asks for the
// index only if it changed: an unchanged one returns ErrNotModified and etag.
// It returns the index and its ETag.
//
// The Client keeps the last index it fetched and, once it holds one, asks
// for what changed since (SinceParam): one request carries the entries
// added, changed and removed however many publications it missed, and the
// Client applies them to what it holds. Every index it returns is verified
// against its digest, the ETag: the root of a Merkle tree (package
// internal/indexdigest) over the entries in index order, each leaf the
// SHA-256 of 0x00 and the plugin, version, url and sha256 fields, each
// preceded by its length as 4 bytes big-endian. When the registry cannot
// answer since what the Client holds (410 Gone: too old, or another
// replica's history) or the delta does not digest to what the registry
// says, the Client fetches the whole index. A whole index whose entries do
// not digest to its ETag is a *ResponseError; one whose ETag is not a
// digest (a registry without deltas) is returned unverified. An index or
// delta over 64 MiB is a *ResponseError too, refused before its body is
// read when its Content-Length says so.
func (c *Client) Index(ctx context.Context, etag string) (Index, string, error) {
	ifNoneMatch := etag
	if h := c.held(); h != nil {
		if idx, tag, err, ok := c.indexDelta(ctx, h, etag); ok {
			return idx, tag, err
		}
		if etag != h.etag {
			// The registry cannot answer since what is held, and the
			// caller's etag names another index: a 304 would leave the
			// outdated index held, and every later poll would pay for
			// the refused delta again. Fetch the whole index to hold it.
			ifNoneMatch = ""
		}
	}
	idx, tag, err := c.fullIndex(ctx, ifNoneMatch)
	if err == nil && etag != "" && ifNoneMatch == "" && tag == etag {
		return Index{}, etag, ErrNotModified
	}
	return idx, tag, err
}

// fullIndex fetches the whole index and holds it. With a non-empty etag it
// asks for it only if it changed (and then holds nothing new).
func (c *Client) fullIndex(ctx context.Context, etag string) (Index, string, error) {
	u := c.base.JoinPath(IndexPath).String()
	resp, attempts, err := c.get(ctx, c.index, u, func(h http.Header) {
		h.Set("Accept", "application/json")
		if etag != "" {
			h.Set("If-None-Match", etag)
		}
	}, http.StatusOK, http.StatusNotModified)
	if err != nil {
		return Index{}, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified {
		if etag == "" {
			// Not modified since nothing: a cache in the way, not the registry.
			return Index{}, "", &ResponseError{URL: u, Reason: "it answered 304 Not Modified to a request that named no ETag"}
		}
		return Index{}, etag, ErrNotModified
	}
	body, err := readIndexBody(resp, u, attempts, "index")
	if err != nil {
		return Index{}, "", err
	}
	var idx Index
	if err := json.Unmarshal(body, &idx); err != nil {
		return Index{}, "", &ResponseError{URL: u, Reason: "the index is not valid JSON", Err: err}
	}
	return c.accept(u, idx, resp.Header.Get("ETag"))
}

// readIndexBody reads an index or delta (what) of at most maxIndexBytes:
// one whose Content-Length says it is larger is refused before its body is
// read, and one sent without it once maxIndexBytes+1 bytes have been read.
func readIndexBody(resp *http.Response, u string, attempts int, what string) ([]byte, error) {
	if resp.ContentLength > maxIndexBytes {
		return nil, &ResponseError{URL: u, Reason: fmt.Sprintf("the %s declares %d bytes, more than the %d bytes read", what, resp.ContentLength, maxIndexBytes)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxIndexBytes+1))
	if err != nil {
		return nil, &TransportError{URL: u, Attempts: attempts, Err: err}
	}
	if len(body) > maxIndexBytes {
		return nil, &ResponseError{URL: u, Reason: fmt.Sprintf("the %s is larger than %d bytes", what, maxIndexBytes)}
	}
	return body, nil
}

// accept verifies a whole index against its ETag and holds it.
func (c *Client) accept(u string, idx Index, tag string) (Index, string, error) {
	if _, ok := etagDigest(tag); !ok {
		// Not a registry that digests its index: nothing to verify, and
		// no deltas to ask for.
		c.hold(nil)
		return idx, tag, nil
	}
	h, err := holdIndex(idx, tag)
	if err != nil {
		return Index{}, "", &ResponseError{URL: u, Reason: "the index does not match its digest", Err: err}
	}
	c.hold(h)
	return idx, tag, nil
}

// Download opens the bundle an index entry lists. The caller reads and
// closes it; reading is bounded by the download timeout, and a read that
// fails (timed out, the connection dropped) is a *TransportError. The stream is
// verified against the sha256 the entry lists: a stream whose bytes do not
// match ends with a *DigestError instead of io.EOF, so a caller that reads
// to the end never takes other bytes for the listed ones. An entry without
// a valid sha256 is refused with a *DigestError before any request, and an
// answer whose X-Bundle-Sha256 names other bytes is refused before its body
// is read.
func (c *Client) Download(ctx context.Context, e IndexEntry) (io.ReadCloser, error) {
	if err := landing.ValidateModuleName(e.Plugin); err != nil {
		return nil, err
	}
	if err := landing.ValidateVersion(e.Version); err != nil {
		return nil, err
	}
	want := landing.FoldName(strings.TrimSpace(e.SHA256))
	if !isSHA256Hex(want) {
		return nil, &DigestError{Plugin: e.Plugin, Version: e.Version, Want: e.SHA256}
	}
	u := c.base.JoinPath(BundlesPath, e.Plugin, e.Version).String()
	resp, attempts, err := c.get(ctx, c.download, u, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	if got := landing.FoldName(strings.TrimSpace(resp.Header.Get(BundleDigestHeader))); got != "" && got != want {
		_ = resp.Body.Close()
		return nil, &DigestError{Plugin: e.Plugin, Version: e.Version, Want: want, Got: got}
	}
	return &verifiedBody{rc: resp.Body, h: sha256.New(), entry: e, want: want, size: resp.ContentLength, url: u, attempts: attempts}, nil
}

// verifiedBody hashes a download as it is read and ends it with a
// *DigestError, not io.EOF, when the bytes are not the ones listed, and
// with a *TransportError naming the bundle's URL when the body cannot be
// read to its end (it stalled past the download timeout, the connection
// dropped, ctx ended).
type verifiedBody struct {
	rc       io.ReadCloser
	h        hash.Hash
	entry    IndexEntry
	want     string
	size     int64 // the Content-Length; -1 if none
	url      string
	attempts int
	err      error
}

func (b *verifiedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	b.h.Write(p[:n])
	if err == io.EOF {
		if got := hex.EncodeToString(b.h.Sum(nil)); got != b.want {
			err = &DigestError{Plugin: b.entry.Plugin, Version: b.entry.Version, Want: b.want, Got: got}
		}
	} else if err != nil {
		err = &TransportError{URL: b.url, Attempts: b.attempts, Err: err}
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

func (b *verifiedBody) Close() error { return b.rc.Close() }

// CloseIdleConnections closes the connections the client keeps open for
// reuse.
func (c *Client) CloseIdleConnections() { c.transport.CloseIdleConnections() }

type attemptsKey struct{}

// get makes a GET with rc and returns the response if its status is one of
// want, and the attempts made; any other outcome is an *HTTPError or a
// *TransportError.
func (c *Client) get(ctx context.Context, rc *retryablehttp.Client, u string, header func(http.Header), want ...int) (*http.Response, int, error) {
	if c.key == "" { // a client made with only a publish token
		return nil, 0, &ConfigError{Setting: optionKey, Problem: "is empty; Index and Download need the instance key"}
	}
	attempts := new(atomic.Int32)
	ctx = context.WithValue(ctx, attemptsKey{}, attempts)
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, &ResponseError{URL: u, Reason: "cannot build the request", Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if header != nil {
		header(req.Header)
	}
	resp, err := rc.Do(req)
	n := int(attempts.Load())
	if err != nil {
		var he *HTTPError
		if errors.As(err, &he) {
			he.URL = u
			return nil, n, he
		}
		var le *RedirectLoopError
		if errors.As(err, &le) {
			le.URL = u
			return nil, n, le
		}
		return nil, n, &TransportError{URL: u, Attempts: n, Err: err}
	}
	for _, s := range want {
		if resp.StatusCode == s {
			return resp, n, nil
		}
	}
	return nil, n, httpErrorFrom(resp, u, n)
}

// httpErrorFrom consumes resp into an *HTTPError.
func httpErrorFrom(resp *http.Response, u string, attempts int) *HTTPError {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
	ra, _ := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return &HTTPError{URL: u, Status: resp.StatusCode, RetryAfter: ra, Body: strings.TrimSpace(string(body)), Attempts: attempts}
}

// newRetrying builds the retrying client for one kind of call.
func newRetrying(hc *http.Client, attemptTimeout time.Duration, attempts int, maxWait time.Duration, logger *slog.Logger) *retryablehttp.Client {
	bounded := *hc
	bounded.Timeout = attemptTimeout
	bounded.CheckRedirect = sameOrigin(hc.CheckRedirect)
	return &retryablehttp.Client{
		HTTPClient:   &bounded,
		Logger:       debugLogger{logger},
		RetryWaitMin: min(time.Second, maxWait),
		RetryWaitMax: maxWait,
		RetryMax:     attempts - 1,
		CheckRetry: func(ctx context.Context, resp *http.Response, err error) (bool, error) {
			if n, ok := ctx.Value(attemptsKey{}).(*atomic.Int32); ok {
				n.Add(1)
			}
			return retryable(ctx, resp, err)
		},
		Backoff: func(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
			return retryWait(lo, hi, attempt, resp, time.Now())
		},
		ErrorHandler: func(resp *http.Response, err error, attempts int) (*http.Response, error) {
			var le *RedirectLoopError
			if errors.As(err, &le) { // Go hands back the last 3xx with it
				if resp != nil {
					_ = resp.Body.Close()
				}
				return nil, le
			}
			if resp != nil {
				return nil, httpErrorFrom(resp, "", attempts)
			}
			return nil, err
		},
	}
}

// sameOrigin follows a redirect only within the origin (scheme, host and
// port) of the first request, then as next (or Go's default) would: Go
// keeps Authorization on a redirect to the same host name whatever the
// port or scheme, so another service on the host, or plain http, would be
// handed the key. A redirect elsewhere is answered by the 3xx itself.
func sameOrigin(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		from := via[0].URL
		if req.URL.Scheme != from.Scheme || canonicalHost(req.URL) != canonicalHost(from) {
			return http.ErrUseLastResponse
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 { // Go's default
			return &RedirectLoopError{Last: req.URL.Redacted(), Redirects: len(via)}
		}
		return nil
	}
}

// canonicalHost is u's host and port, the port made explicit and the host
// folded in ASCII case only, as DNS compares names (RFC 4343): a host
// spelled with U+212A KELVIN SIGN is another origin.
func canonicalHost(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(landing.FoldName(u.Hostname()), port)
}

// retryable says whether an attempt may pass if repeated: a transport
// failure, 429, or a registry that could not find out (502, 503, 504). A
// 500 is a deterministic failure the registry has logged; repeating it
// would hit the same wall, so it is returned at once.
func retryable(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if le := (*RedirectLoopError)(nil); errors.As(err, &le) {
		return false, err
	}
	if err == nil && resp != nil && resp.StatusCode == http.StatusInternalServerError {
		return false, nil
	}
	return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
}

// retryWait is how long to wait before retrying after resp: what a 429 or
// 503 asked for in Retry-After, else an exponential backoff from lo; never
// more than hi.
func retryWait(lo, hi time.Duration, attempt int, resp *http.Response, now time.Time) time.Duration {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			return min(ra, hi)
		}
	}
	wait := lo
	for i := 0; i < attempt && wait < hi; i++ {
		wait *= 2
	}
	return min(wait, hi)
}

// parseRetryAfter reads a Retry-After value: seconds, or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(24*time.Hour/time.Second) {
			secs = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(secs) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// debugLogger hands retryablehttp's per-attempt lines to slog at Debug: an
// attempt that fails is not yet a failure of the call, and the call's
// outcome is reported by its error.
type debugLogger struct{ l *slog.Logger }

func (d debugLogger) Error(msg string, kv ...any) { d.l.Debug(msg, kv...) }
func (d debugLogger) Warn(msg string, kv ...any)  { d.l.Debug(msg, kv...) }
func (d debugLogger) Info(msg string, kv ...any)  { d.l.Debug(msg, kv...) }
func (d debugLogger) Debug(msg string, kv ...any) { d.l.Debug(msg, kv...) }

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// newTransport is a transport of the client's own, with bounded connection
// set-up, so that no client shares or mutates http.DefaultTransport.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
