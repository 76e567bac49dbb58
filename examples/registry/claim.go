package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/registry/landing/s3volume"
)

// A registry on the embedded store keeps its own mesh: two of them on one
// bucket and prefix would write one journal and one set of records while
// each knows only its own mesh. So such a registry claims the volume for
// its store at start. The claim is a numbered object under claimDir
// (claimDir/00000000000000000001, …); the highest number is the claim in
// force. A start writes the next number with a conditional PUT
// (If-None-Match: *, s3volume.CreateExclusive), so of two starters taking
// over one expired claim exactly one succeeds. Registries on -pg share one
// store and do not claim: the database is the one authority every replica
// on the bucket agrees with.
const claimDir = "store-claim"

// Lease of a claim: the holder renews it every claimRenew; a claim not
// renewed for claimLease (its holder died) may be taken over. A holder
// that has not renewed by claimMargin before its lease ends counts its
// claim lost and stops writing (see volumeClaim.err): a taker waits for
// the lease's end on its own clock, so the margin is what two hosts'
// clocks may disagree by, and what a write sent just before the fence
// may take to land.
const (
	claimLease  = 60 * time.Second
	claimRenew  = claimLease / 3
	claimMargin = claimLease / 6
)

// storeIDFile keeps the embedded store's identity beside mesh.jsonl, so a
// restart on the same -data recognises its own claim.
const storeIDFile = "store-id"

// claimRecord is a claim object's content.
type claimRecord struct {
	Store    string    `json:"store"`  // the claiming store's identity
	Holder   string    `json:"holder"` // the holding registry's host and the address it listens on (as -addr gave it until it listens, then the one bound)
	Expires  time.Time `json:"expires"`
	Released bool      `json:"released,omitempty"` // a clean shutdown gave it up
}

// VolumeClaimedError is a start refused because another registry's
// embedded store holds the volume's claim.
type VolumeClaimedError struct {
	Volume  string    // s3://bucket/prefix
	Holder  string    // the holding registry's host and address
	Store   string    // the holding store's identity
	Expires time.Time // when its lease ends unless renewed
}

func (e *VolumeClaimedError) Error() string {
	return fmt.Sprintf("-volume %s is claimed by the embedded store %s of the registry at %s (lease until %s): two registries on the embedded store cannot share a bucket and prefix; give both -pg with one database, or another prefix",
		e.Volume, e.Store, e.Holder, e.Expires.UTC().Format(time.RFC3339))
}

// ClaimLostError is a registry's claim on its volume lost while it ran:
// another registry took the volume over, or this one could not renew its
// lease in time. From then on the registry writes nothing there (every
// call to the volume is refused with this error, which a client gets as a
// 503) and stops: run returns it, so the process exits non-zero and its
// supervisor restarts it, which is refused with a *VolumeClaimedError
// while another registry's claim is live.
type ClaimLostError struct {
	Volume string // s3://bucket/prefix
	Holder string // the registry holding the claim in force now ("" when not known)
	Store  string // its store's identity ("" when not known)
	Reason string
}

func (e *ClaimLostError) Error() string {
	s := fmt.Sprintf("-volume %s: this registry lost its claim on it (%s)", e.Volume, e.Reason)
	if e.Holder != "" || e.Store != "" {
		s += fmt.Sprintf("; the embedded store %s of the registry at %s holds it now", e.Store, e.Holder)
	}
	return s + "; it stops writing there and shuts down, so that one store writes one bucket and prefix"
}

// Unavailable reports true: a volume call refused after the loss is, to a
// client, a registry that cannot reach its volume (landing.IsUnavailable:
// 503 with Retry-After).
func (e *ClaimLostError) Unavailable() bool { return true }

// volumeClaim is a held claim, renewed until release or loss.
type volumeClaim struct {
	v      *s3volume.Volume
	clk    clock.Clock
	gen    uint64
	logger *slog.Logger

	stopping context.Context // ended by release
	halt     context.CancelFunc
	done     chan struct{} // closed when renew returns

	lost     context.Context // ended, with its *ClaimLostError as cause, on the loss
	lose     context.CancelCauseFunc
	failOnce sync.Once

	renewing sync.Mutex // one renewal (or release) at a time

	mu       sync.Mutex
	rec      claimRecord // as last written
	deadline time.Time   // the fence: rec.Expires - claimMargin
}

// storeID returns the identity kept in dir (made on first use), or a new
// one when dir is "" (the store is new on each start).
func storeID(dir string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generating a store id: %w", err)
	}
	id := hex.EncodeToString(b[:])
	if dir == "" {
		return id, nil
	}
	p := filepath.Join(dir, storeIDFile)
	if kept, err := os.ReadFile(p); err == nil && len(strings.TrimSpace(string(kept))) > 0 {
		return strings.TrimSpace(string(kept)), nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading the store id: %w", err)
	}
	if err := os.WriteFile(p, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("keeping the store id: %w", err)
	}
	return id, nil
}

func claimName(gen uint64) string { return fmt.Sprintf("%s/%020d", claimDir, gen) }

// currentClaim returns the claim in force (gen 0: none).
func currentClaim(ctx context.Context, v *s3volume.Volume) (uint64, claimRecord, error) {
	entries, err := v.ReadDir(ctx, claimDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, claimRecord{}, fmt.Errorf("listing the volume's claim: %w", err)
	}
	var gens []uint64
	for _, e := range entries {
		if g, err := strconv.ParseUint(e.Name(), 10, 64); err == nil && !e.IsDir() {
			gens = append(gens, g)
		}
	}
	if len(gens) == 0 {
		return 0, claimRecord{}, nil
	}
	gen := slices.Max(gens)
	b, err := v.ReadFile(ctx, claimName(gen), 1<<12)
	if err != nil {
		return 0, claimRecord{}, fmt.Errorf("reading the volume's claim: %w", err)
	}
	var rec claimRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return 0, claimRecord{}, fmt.Errorf("reading the volume's claim %s: %w", claimName(gen), err)
	}
	return gen, rec, nil
}

// claimVolume claims v for the store id, or refuses with a
// *VolumeClaimedError while another store's lease is live. Each call to
// the store is bounded by the volume's call budget.
func claimVolume(ctx context.Context, v *s3volume.Volume, clk clock.Clock, id, holder string, logger *slog.Logger) (*volumeClaim, error) {
	for range 3 {
		gen, cur, err := currentClaim(ctx, v)
		if err != nil {
			return nil, err
		}
		rec := claimRecord{Store: id, Holder: holder, Expires: clk.Now().Add(claimLease)}
		b, _ := json.Marshal(rec)
		if gen > 0 && cur.Store == id { // our own claim: a restart on the same -data
			if err := v.WriteFile(ctx, claimName(gen), b); err != nil {
				return nil, fmt.Errorf("renewing the volume's claim: %w", err)
			}
			return holdClaim(v, clk, gen, rec, logger), nil
		}
		if gen > 0 && !cur.Released && clk.Now().Before(cur.Expires) {
			return nil, &VolumeClaimedError{Volume: v.String(), Holder: cur.Holder, Store: cur.Store, Expires: cur.Expires}
		}
		err = v.CreateExclusive(ctx, claimName(gen+1), b)
		if errors.Is(err, fs.ErrExist) {
			continue // another starter took it first: read its claim
		}
		if err != nil {
			return nil, fmt.Errorf("claiming the volume: %w", err)
		}
		return holdClaim(v, clk, gen+1, rec, logger), nil
	}
	return nil, fmt.Errorf("claiming the volume %s: the claim changed under three attempts in a row", v)
}

func holdClaim(v *s3volume.Volume, clk clock.Clock, gen uint64, rec claimRecord, logger *slog.Logger) *volumeClaim {
	c := &volumeClaim{v: v, clk: clk, gen: gen, logger: logger, done: make(chan struct{}), rec: rec, deadline: rec.Expires.Add(-claimMargin)}
	c.stopping, c.halt = context.WithCancel(context.Background())
	c.lost, c.lose = context.WithCancelCause(context.Background())
	t := clk.Ticker(claimRenew) // before the return: the lease's clock starts now
	go c.renew(t)
	return c
}

// renew extends the lease every claimRenew until release, and stops at the
// loss: when a renewal finds another claim in force, or at the fence when
// no renewal succeeded before it.
func (c *volumeClaim) renew(t *clock.Ticker) {
	defer close(c.done)
	defer t.Stop()
	for {
		fence, endFence := c.clk.WithDeadline(c.stopping, c.fence())
		select {
		case <-fence.Done():
		case <-t.C:
		}
		endFence()
		if c.stopping.Err() != nil {
			return
		}
		err := c.renewOnce(c.stopping) // at the fence, it finds the claim lost
		var lost *ClaimLostError
		if errors.As(err, &lost) {
			return
		}
		if err != nil {
			c.logger.Error("registry: renewing the volume's claim failed; unless a renewal succeeds first, the registry stops writing to the volume and shuts down at the fence, before its lease ends",
				slog.String("volume", c.v.String()), slog.String("claim", claimName(c.gen)), slog.Time("fence", c.fence()), slog.Any("err", err))
		}
	}
}

func (c *volumeClaim) fence() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline
}

// renewOnce extends the lease, if the claim is still the one in force: a
// later claim (another registry took the volume over) or our claim object
// gone or rewritten by another store is the claim lost. The renewal is cut
// at the fence, and one that completes past it does not count.
func (c *volumeClaim) renewOnce(ctx context.Context) error {
	c.renewing.Lock()
	defer c.renewing.Unlock()
	if err := c.err(); err != nil {
		return err
	}
	ctx, cancel := c.clk.WithDeadline(ctx, c.fence())
	defer cancel()
	err := func() error {
		gen, cur, err := currentClaim(ctx, c.v)
		if err != nil {
			return err
		}
		c.mu.Lock()
		rec := c.rec
		c.mu.Unlock()
		switch {
		case gen > c.gen:
			return c.fail(&ClaimLostError{Volume: c.v.String(), Holder: cur.Holder, Store: cur.Store,
				Reason: fmt.Sprintf("a later claim, %s, is in force: another registry took the volume over, having found this one's lease ended", claimName(gen))})
		case gen == c.gen && cur.Store != rec.Store:
			return c.fail(&ClaimLostError{Volume: c.v.String(), Holder: cur.Holder, Store: cur.Store,
				Reason: fmt.Sprintf("its claim object %s names another store", claimName(c.gen))})
		case gen < c.gen:
			return c.fail(&ClaimLostError{Volume: c.v.String(),
				Reason: fmt.Sprintf("its claim object %s is gone from the volume", claimName(c.gen))})
		}
		rec.Expires = c.clk.Now().Add(claimLease)
		b, _ := json.Marshal(rec)
		if err := c.v.WriteFile(ctx, claimName(c.gen), b); err != nil { // bounded by the volume's call budget and the fence
			return fmt.Errorf("renewing the volume's claim: %w", err)
		}
		if err := c.err(); err != nil {
			return err // it completed past the fence: a taker may have come first
		}
		c.mu.Lock()
		c.rec, c.deadline = rec, rec.Expires.Add(-claimMargin)
		c.mu.Unlock()
		return nil
	}()
	if lost := c.err(); lost != nil {
		return lost
	}
	return err
}

// err is the *ClaimLostError once the claim is lost, and nil until then.
// The fence is read on the clock at each call: a holder whose last
// renewal's lease ends within claimMargin has lost its claim, whether or
// not its renewal loop has woken up to it.
func (c *volumeClaim) err() error {
	if c.lost.Err() != nil {
		return context.Cause(c.lost)
	}
	c.mu.Lock()
	deadline, expires := c.deadline, c.rec.Expires
	c.mu.Unlock()
	if c.clk.Now().Before(deadline) {
		return nil
	}
	return c.fail(&ClaimLostError{Volume: c.v.String(),
		Reason: fmt.Sprintf("no renewal succeeded in time: its lease ends at %s, and a holder stops writing %s before it, as another registry may take the volume over at its end",
			expires.UTC().Format(time.RFC3339), claimMargin)})
}

// fail logs and records the loss (the first one found), once, logged
// before anyone waiting on c.lost learns of it; it returns the loss
// recorded.
func (c *volumeClaim) fail(e *ClaimLostError) error {
	c.failOnce.Do(func() {
		c.logger.Error("registry: the volume's claim is lost; the registry stops writing to the volume and shuts down",
			slog.String("volume", e.Volume), slog.String("holder", e.Holder), slog.String("store", e.Store),
			slog.String("claim", claimName(c.gen)), slog.String("reason", e.Reason))
		c.lose(e)
	})
	return context.Cause(c.lost)
}

// announce records holder (the address the registry listens on, known
// only once it listens) in the claim now. A failure other than the loss
// leaves it to the next renewal.
func (c *volumeClaim) announce(ctx context.Context, holder string) error {
	c.renewing.Lock()
	c.mu.Lock()
	c.rec.Holder = holder
	c.mu.Unlock()
	c.renewing.Unlock()
	return c.renewOnce(ctx)
}

// release stops renewing and marks the claim released, so the next start
// may take it at once. A claim lost is not written: it is not this
// registry's any more.
func (c *volumeClaim) release(ctx context.Context) error {
	c.halt()
	<-c.done // bounded: the renewal in flight is cancelled
	c.renewing.Lock()
	defer c.renewing.Unlock()
	if c.err() != nil {
		return nil // logged when found; run reports it
	}
	c.mu.Lock()
	rec := c.rec
	c.mu.Unlock()
	rec.Released = true
	b, _ := json.Marshal(rec)
	if err := c.v.WriteFile(ctx, claimName(c.gen), b); err != nil {
		return fmt.Errorf("releasing the volume's claim: %w", err)
	}
	return nil
}

// volume is the claimed volume as the registry uses it: fenced by the
// claim. Once the claim is lost every call is refused with the
// *ClaimLostError before it starts; a write in flight is cancelled at the
// loss and, like any call that returns after it, reports the loss rather
// than its outcome, so nothing written is acknowledged after it. (A PUT
// the store received whole before the cancellation may still be applied:
// that is what claimMargin leaves room for.)
func (c *volumeClaim) volume() *fencedVolume { return &fencedVolume{c: c} }

// fencedVolume is a landing.Volume, StreamingVolume and ExclusiveVolume
// (registry/landing): see volumeClaim.volume.
type fencedVolume struct{ c *volumeClaim }

// write runs a call that changes the volume.
func (f *fencedVolume) write(ctx context.Context, call func(context.Context) error) error {
	if err := f.c.err(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(f.c.lost, func() { cancel(context.Cause(f.c.lost)) })()
	err := call(ctx)
	if lost := f.c.err(); lost != nil {
		return lost
	}
	return err
}

// read runs a call that reads the volume: refused after the loss, as the
// landing reads a write's outcome (a record's commit) back.
func read[T any](f *fencedVolume, call func() (T, error)) (T, error) {
	if err := f.c.err(); err != nil {
		var zero T
		return zero, err
	}
	v, err := call()
	if lost := f.c.err(); lost != nil && err == nil {
		if cl, ok := any(v).(io.Closer); ok {
			_ = cl.Close()
		}
		var zero T
		return zero, lost
	}
	return v, err
}

// MaxNameLen passes the store's key limit on (landing.NameLimitedVolume),
// so that the landing refuses an archive whose files would not fit.
func (f *fencedVolume) MaxNameLen() int { return f.c.v.MaxNameLen() }

func (f *fencedVolume) MkdirAll(ctx context.Context, name string) error {
	return f.write(ctx, func(ctx context.Context) error { return f.c.v.MkdirAll(ctx, name) })
}

func (f *fencedVolume) WriteFile(ctx context.Context, name string, data []byte) error {
	return f.write(ctx, func(ctx context.Context) error { return f.c.v.WriteFile(ctx, name, data) })
}

func (f *fencedVolume) WriteFrom(ctx context.Context, name string, r io.Reader) error {
	return f.write(ctx, func(ctx context.Context) error { return f.c.v.WriteFrom(ctx, name, r) })
}

func (f *fencedVolume) CreateExclusive(ctx context.Context, name string, data []byte) error {
	return f.write(ctx, func(ctx context.Context) error { return f.c.v.CreateExclusive(ctx, name, data) })
}

func (f *fencedVolume) Rename(ctx context.Context, oldname, newname string) error {
	return f.write(ctx, func(ctx context.Context) error { return f.c.v.Rename(ctx, oldname, newname) })
}

func (f *fencedVolume) RemoveAll(ctx context.Context, name string) error {
	return f.write(ctx, func(ctx context.Context) error { return f.c.v.RemoveAll(ctx, name) })
}

func (f *fencedVolume) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	return read(f, func() ([]fs.DirEntry, error) { return f.c.v.ReadDir(ctx, name) })
}

func (f *fencedVolume) ReadFile(ctx context.Context, name string, max int64) ([]byte, error) {
	return read(f, func() ([]byte, error) { return f.c.v.ReadFile(ctx, name, max) })
}

func (f *fencedVolume) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	return read(f, func() (fs.FileInfo, error) { return f.c.v.Stat(ctx, name) })
}

func (f *fencedVolume) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return read(f, func() (io.ReadCloser, error) { return f.c.v.Open(ctx, name) })
}

func (f *fencedVolume) String() string { return f.c.v.String() }

// Close closes the volume underneath.
func (f *fencedVolume) Close() error { return f.c.v.Close() }
