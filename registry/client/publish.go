package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/meshrx/meshrx/registry/landing"
)

// PublishRefusal is the JSON body of a refused publication: the message,
// and the facts a caller acts on, present where they apply.
type PublishRefusal struct {
	Error string `json:"error"`
	// A 409 for other bytes under a published version: what it holds and
	// what was offered.
	PublishedSHA256 string `json:"publishedSha256,omitempty"`
	GivenSHA256     string `json:"givenSha256,omitempty"`
	// A 400 for a tier the plan ladder does not have: the tier given and
	// the ones it has.
	Tier       string   `json:"tier,omitempty"`
	KnownTiers []string `json:"knownTiers,omitempty"`
}

// Published is the registry's answer to a publication that landed, or found
// the same bytes landed already (Created false).
type Published struct {
	landing.Record
	Tier    string `json:"tier"`
	Created bool   `json:"created"`
}

// ConflictError is a 409: the version is published with other bytes (a
// published version is immutable), or the registry's package nodes are in
// a state it refuses to publish into (then the digests are empty).
type ConflictError struct {
	Plugin, Version string
	PublishedSHA256 string // what the version holds
	GivenSHA256     string // the bytes this call offered
	Message         string // the registry's words
}

func (e *ConflictError) Error() string {
	if e.PublishedSHA256 == "" {
		return fmt.Sprintf("registry: publishing %s@%s: conflict: %s", e.Plugin, e.Version, e.Message)
	}
	return fmt.Sprintf("registry: %s@%s is already published with sha256 %s, and these bytes have sha256 %s: a published version is immutable, publish a new version",
		e.Plugin, e.Version, e.PublishedSHA256, e.GivenSHA256)
}

// UnknownTierError is a 400 for a tier the registry's plan ladder does not
// have.
type UnknownTierError struct {
	Tier  string
	Known []string // the tiers the ladder has
}

func (e *UnknownTierError) Error() string {
	known := "none"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("registry: unknown tier %q; the known tiers are %s (or \"\" for the baseline)", e.Tier, known)
}

// TooLargeError is a 413, or a bundle larger than Options.MaxPublishBytes
// found before sending it (Status 0).
type TooLargeError struct {
	Plugin, Version string
	Limit           int64  // the client's limit, when the client refused it
	Message         string // the registry's words, when it refused it
}

func (e *TooLargeError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("registry: publishing %s@%s: too large: %s", e.Plugin, e.Version, e.Message)
	}
	return fmt.Sprintf("registry: publishing %s@%s: the bundle is larger than client.Options.MaxPublishBytes (%d bytes); raise it if the registry takes more", e.Plugin, e.Version, e.Limit)
}

// Publish uploads a bundle (a zip archive) as version of the package name,
// at tier ("" for the baseline, or for a package published before, whose
// tier is kept), with Options.PublishToken. It returns what the registry
// recorded; the same bytes again are not an error (Created is false).
//
// Refusals are typed: a *ConflictError (409, naming both sha256), an
// *UnknownTierError (400, naming the known tiers), a *TooLargeError (413),
// an *HTTPError for any other status. A 503 or 429 is retried after what
// its Retry-After asks (capped by Options.MaxRetryWait), within
// Options.Attempts; the last one is an *HTTPError with RetryAfter set. A
// publication is safe to repeat: the registry answers the same bytes with
// 200. Sending again needs the bytes again: an io.ReadSeeker (an *os.File,
// a *bytes.Reader) is re-read from its current offset; any other reader is
// first copied to a temporary file, at most Options.MaxPublishBytes.
func (c *Client) Publish(ctx context.Context, name, version, tier string, bundle io.Reader) (Published, error) {
	if c.publishToken == "" {
		return Published{}, &ConfigError{Setting: "client.Options.PublishToken", Problem: "is empty; Publish needs the registry's publish token"}
	}
	if bundle == nil {
		return Published{}, &ConfigError{Setting: "the bundle argument of Publish", Problem: "is nil"}
	}
	if err := landing.ValidateModuleName(name); err != nil {
		return Published{}, err
	}
	if err := landing.ValidateVersion(version); err != nil {
		return Published{}, err
	}
	body, size, release, err := c.replayable(name, version, bundle)
	if err != nil {
		return Published{}, err
	}
	defer release()

	u := c.base.JoinPath(BundlesPath, name)
	q := u.Query()
	q.Set("version", version)
	if tier != "" {
		q.Set("tier", tier)
	}
	u.RawQuery = q.Encode()
	attempts := new(atomic.Int32)
	ctx = context.WithValue(ctx, attemptsKey{}, attempts)
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, u.String(), retryablehttp.ReaderFunc(body))
	if err != nil {
		return Published{}, &ResponseError{Method: http.MethodPost, URL: u.String(), Reason: "cannot build the request", Err: err}
	}
	req.ContentLength = size // a registry with a smaller cap refuses before reading a byte
	req.Header.Set("Authorization", "Bearer "+c.publishToken)
	req.Header.Set("Content-Type", "application/zip")
	req.Header.Set("Accept", "application/json")
	resp, err := c.publish.Do(req)
	n := int(attempts.Load())
	if err != nil {
		var he *HTTPError
		if errors.As(err, &he) {
			he.Method, he.URL = http.MethodPost, u.String()
			return Published{}, publishRefusal(he, name, version)
		}
		var le *RedirectLoopError
		if errors.As(err, &le) {
			le.Method, le.URL = http.MethodPost, u.String()
			return Published{}, le
		}
		return Published{}, &TransportError{Method: http.MethodPost, URL: u.String(), Attempts: n, Err: err}
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		he := httpErrorFrom(resp, u.String(), n)
		he.Method = http.MethodPost
		return Published{}, publishRefusal(he, name, version)
	}
	defer resp.Body.Close()
	var p Published
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxErrorBodyBytes)).Decode(&p); err != nil {
		return Published{}, &ResponseError{Method: http.MethodPost, URL: u.String(), Reason: "the publication's answer is not its record", Err: err}
	}
	return p, nil
}

// publishRefusal turns a refused publication into its typed error.
func publishRefusal(he *HTTPError, name, version string) error {
	var r PublishRefusal
	_ = json.Unmarshal([]byte(he.Body), &r) // a body that is not ours leaves r empty
	switch {
	case he.Status == http.StatusConflict:
		return &ConflictError{Plugin: name, Version: version, PublishedSHA256: r.PublishedSHA256, GivenSHA256: r.GivenSHA256, Message: r.Error}
	case he.Status == http.StatusBadRequest && r.KnownTiers != nil:
		return &UnknownTierError{Tier: r.Tier, Known: r.KnownTiers}
	case he.Status == http.StatusRequestEntityTooLarge:
		msg := r.Error
		if msg == "" {
			msg = he.Body
		}
		return &TooLargeError{Plugin: name, Version: version, Message: msg}
	}
	return he
}

// replayable returns a function that gives the bundle's bytes from the
// start for each attempt, their size, and what to release afterwards.
func (c *Client) replayable(name, version string, bundle io.Reader) (func() (io.Reader, error), int64, func(), error) {
	if rs, ok := bundle.(io.ReadSeeker); ok {
		start, err := rs.Seek(0, io.SeekCurrent)
		if err == nil {
			end, err := rs.Seek(0, io.SeekEnd)
			if err == nil {
				size := end - start
				return func() (io.Reader, error) {
					if _, err := rs.Seek(start, io.SeekStart); err != nil {
						return nil, err
					}
					return io.LimitReader(rs, size), nil
				}, size, func() {}, nil
			}
		}
		// Not seekable after all (a pipe behind an *os.File): copy it.
	}
	f, err := os.CreateTemp("", "meshrx-publish-*.zip")
	if err != nil {
		return nil, 0, nil, fmt.Errorf("registry: publishing %s@%s: a copy of the bundle is needed to send it again after a 503: %w", name, version, err)
	}
	release := func() { _ = f.Close(); _ = os.Remove(f.Name()) }
	n, err := io.Copy(f, io.LimitReader(bundle, c.maxPublish+1))
	switch {
	case err != nil:
		release()
		return nil, 0, nil, fmt.Errorf("registry: publishing %s@%s: reading the bundle: %w", name, version, err)
	case n > c.maxPublish:
		release()
		return nil, 0, nil, &TooLargeError{Plugin: name, Version: version, Limit: c.maxPublish}
	}
	return func() (io.Reader, error) { return io.NewSectionReader(f, 0, n), nil }, n, release, nil
}
