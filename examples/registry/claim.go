package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
// renewed for claimLease (its holder died) may be taken over.
const (
	claimLease = 60 * time.Second
	claimRenew = claimLease / 3
)

// storeIDFile keeps the embedded store's identity beside mesh.jsonl, so a
// restart on the same -data recognises its own claim.
const storeIDFile = "store-id"

// claimRecord is a claim object's content.
type claimRecord struct {
	Store    string    `json:"store"`  // the claiming store's identity
	Holder   string    `json:"holder"` // host and address of the registry holding it
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

// volumeClaim is a held claim, renewed until release.
type volumeClaim struct {
	v      *s3volume.Volume
	clk    clock.Clock
	name   string
	rec    claimRecord
	logger *slog.Logger
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
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
			return holdClaim(v, clk, claimName(gen), rec, logger), nil
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
		return holdClaim(v, clk, claimName(gen+1), rec, logger), nil
	}
	return nil, fmt.Errorf("claiming the volume %s: the claim changed under three attempts in a row", v)
}

func holdClaim(v *s3volume.Volume, clk clock.Clock, name string, rec claimRecord, logger *slog.Logger) *volumeClaim {
	c := &volumeClaim{v: v, clk: clk, name: name, rec: rec, logger: logger, stop: make(chan struct{}), done: make(chan struct{})}
	t := clk.Ticker(claimRenew) // before the return: the lease's clock starts now
	go c.renew(t)
	return c
}

// renew extends the lease every claimRenew until release.
func (c *volumeClaim) renew(t *clock.Ticker) {
	defer close(c.done)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		rec := c.rec
		rec.Expires = c.clk.Now().Add(claimLease)
		b, _ := json.Marshal(rec)
		if err := c.v.WriteFile(ctx, c.name, b); err != nil { // bounded by the volume's call budget
			c.logger.Error("registry: renewing the volume's claim failed; another registry may take it over once the lease ends",
				slog.String("claim", c.name), slog.Time("lease_until", c.rec.Expires), slog.Any("err", err))
			continue
		}
		c.rec = rec
	}
}

// release stops renewing and marks the claim released, so the next start
// may take it at once.
func (c *volumeClaim) release(ctx context.Context) error {
	c.once.Do(func() { close(c.stop) })
	<-c.done // bounded: the renewal in flight is cancelled
	rec := c.rec
	rec.Released = true
	b, _ := json.Marshal(rec)
	if err := c.v.WriteFile(ctx, c.name, b); err != nil {
		return fmt.Errorf("releasing the volume's claim: %w", err)
	}
	return nil
}
