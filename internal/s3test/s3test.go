// Package s3test starts a throwaway S3-protocol server for tests, the way
// mesh/pgstore/pgtest starts PostgreSQL: github.com/johannesboyne/gofakes3
// (an S3 implementation in Go, its objects in memory) served over a real
// net/http server on a loopback port, so every request crosses the
// network stack, is signed by the AWS SDK and parsed by the server.
//
// Conditional creates: gofakes3 v1.2.0 honours `If-None-Match: *` on
// PutObject itself, checked under its backend's lock, and answers 412
// PreconditionFailed when the key exists, as AWS S3 documents. No
// middleware adds it; TestTheServerRefusesAConditionalCreateOfAnExistingKey
// checks it stays so.
//
// Listings: the server's backend is s3mem behind an index of its keys
// (index.go), so that a prefix listing costs what it returns rather than a
// walk of the bucket; its answers are s3mem's.
//
// A Server can be stalled (every request hangs until its client gives
// up, or until Resume) and stopped and started again on the same address
// with its objects kept (an outage); Intercept puts a test's handler in
// front of it, for the answers a real store gives that this one does not.
package s3test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Credentials the server accepts (gofakes3 checks no signature; the SDK
// signs with these all the same).
const (
	AccessKey = "meshrx-test"
	SecretKey = "meshrx-test-secret"
	Region    = "us-east-1"
)

// Server is a running S3-protocol server with one bucket.
type Server struct {
	// URL is the endpoint, e.g. http://127.0.0.1:34567.
	URL string
	// Bucket is the bucket created at start.
	Bucket string

	handler http.Handler
	addr    string

	mu       sync.Mutex
	srv      *httptest.Server
	stalled  chan struct{} // closed by Resume; nil when not stalled
	entered  chan string   // receives the path of each request that stalls
	requests int
	tr       *http.Transport
	// intercept, when set, receives every request before the S3 handler.
	intercept func(w http.ResponseWriter, r *http.Request, next http.Handler)
}

// Start starts a server with bucket "meshrx" and stops it when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := New("meshrx")
	if err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// New starts a server with the named bucket; Close stops it.
func New(bucket string) (*Server, error) {
	backend := newIndexed(s3mem.New())
	if err := backend.CreateBucket(bucket); err != nil {
		return nil, err
	}
	faker := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog()))
	s := &Server{Bucket: bucket, handler: faker.Server()}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	s.addr = s.srv.Listener.Addr().String()
	s.tr = http.DefaultTransport.(*http.Transport).Clone()
	return s, nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	stalled, entered, intercept := s.stalled, s.entered, s.intercept
	s.mu.Unlock()
	if stalled != nil {
		select {
		case entered <- r.Method + " " + r.URL.Path:
		default:
		}
		select {
		case <-stalled:
		case <-r.Context().Done():
			return
		}
	}
	if intercept != nil {
		intercept(w, r, s.handler)
		return
	}
	s.handler.ServeHTTP(w, r)
}

// Intercept puts h in front of the S3 handler for every request from now
// on (after a stall): h answers itself or calls next, with the request
// as it arrived or changed, so that a test can give the answers a real
// store gives that this one does not (a 503 without a body, a page of a
// listing rewritten, a body cut short). nil removes it.
func (s *Server) Intercept(h func(w http.ResponseWriter, r *http.Request, next http.Handler)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.intercept = h
}

// Requests is how many requests have arrived so far.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Stall makes every request from now on hang until its client gives up or
// Resume is called. The returned channel receives the method and path of
// stalled requests (it holds 64; later ones are not reported).
func (s *Server) Stall() <-chan string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled == nil {
		s.stalled, s.entered = make(chan struct{}), make(chan string, 64)
	}
	return s.entered
}

// Resume answers the stalled requests and every later one.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled != nil {
		close(s.stalled)
		s.stalled = nil
	}
}

// Stop closes the listener and every connection: requests are refused
// until Start. Objects are kept.
func (s *Server) Stop() {
	s.Resume()
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.CloseClientConnections()
		srv.Close()
	}
}

// Restart listens again on the address it had.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("s3test: the server is running")
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	s.srv = srv
	return nil
}

// Close stops the server for good and closes its clients' idle connections.
func (s *Server) Close() {
	s.Stop()
	s.tr.CloseIdleConnections()
}

// Client returns an S3 client for the server: path-style addressing, the
// test credentials, checksums only where the protocol requires them, no
// redirect followed (as s3volume.Open's). Its connections are closed by
// Close.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:                     Region,
		BaseEndpoint:               aws.String(s.URL),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		HTTPClient:                 &http.Client{Transport: s.tr, CheckRedirect: noRedirect},
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// VolumeURL is the -volume flag for a landing.S3Volume on this server
// under prefix: s3://bucket/prefix?endpoint=…&region=…. The process using
// it needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (any values; see Env).
func (s *Server) VolumeURL(prefix string) string {
	return "s3://" + s.Bucket + "/" + prefix + "?endpoint=" + s.URL + "&region=" + Region
}

// Env is the environment a process opening VolumeURL needs.
func Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + AccessKey, "AWS_SECRET_ACCESS_KEY=" + SecretKey,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
}

// Ping is a listing of the bucket: nil when the server answers.
func (s *Server) Ping(ctx context.Context) error {
	_, err := s.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.Bucket, MaxKeys: aws.Int32(1)})
	return err
}

// noRedirect makes a client return a redirect as its answer.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
