package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/registry"
)

// indexBudget bounds one index request of the measurements below.
const indexBudget = 30 * time.Second

// measureIndex fetches the index twice as a consumer does: once whole
// (assembled for this entitlement, or taken from the cache), once
// revalidated with its ETag. It returns the document's size and both
// latencies.
func measureIndex(ctx context.Context, url, key string) (size int, etag string, first, revalidate time.Duration, err error) {
	c := &http.Client{Timeout: indexBudget}
	get := func(etag string) (int, string, int, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, "", 0, 0, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		began := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", 0, 0, err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("ETag"), int(n), time.Since(began), err
	}
	status, etag, size, first, err := get("")
	if err != nil || status != http.StatusOK {
		return 0, "", 0, 0, errors.Join(err, fmt.Errorf("index: status %d", status))
	}
	status, _, _, revalidate, err = get(etag)
	if err != nil || status != http.StatusNotModified {
		return 0, "", 0, 0, errors.Join(err, fmt.Errorf("index revalidation: status %d", status))
	}
	return size, etag, first, revalidate, nil
}

// runAbsorb starts replicas A and B on one volume and one mesh (the -pg
// database, or one memstore both use), lands -absorb new modules through
// A, one after another, and times each from A's landing returning until
// B's index lists it: through the change feed, or with -feed=false through
// B's re-derivation alone.
func runAbsorb(ctx, setupCtx context.Context, cfg config, dir string, logger *slog.Logger, stdout, stderr io.Writer) (err error) {
	var store mesh.Store
	if cfg.pg != "" {
		pa, err := pgstore.Open(setupCtx, cfg.pg, pgstore.Options{Logger: logger, GatedTypes: auth.DecisionTypes()})
		if err != nil {
			return fmt.Errorf("-pg: %w", err)
		}
		defer func() { err = errors.Join(err, pa.Close()) }()
		store = pa
	} else {
		mem, err := memstore.New(memstore.Options{Logger: logger, GatedTypes: auth.DecisionTypes()})
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, mem.Close()) }()
		store = mem
	}
	storeB := store
	if cfg.pg != "" {
		pb, err := pgstore.Open(setupCtx, cfg.pg, pgstore.Options{Logger: logger, GatedTypes: auth.DecisionTypes()})
		if err != nil {
			return fmt.Errorf("-pg: %w", err)
		}
		defer func() { err = errors.Join(err, pb.Close()) }()
		storeB = pb
	}
	began := time.Now()
	a, err := startReplica(setupCtx, replicaOptions{dir: dir, modules: cfg.modules, latency: cfg.latency, readPool: cfg.readPool,
		store: store, register: true, feed: cfg.feed, journal: cfg.journal, freshness: cfg.freshness, derivationBudget: cfg.derivationBudget, name: "a"}, logger)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
		defer cancel()
		err = errors.Join(err, a.close(sctx))
	}()
	b, err := startReplica(setupCtx, replicaOptions{dir: dir, modules: cfg.modules, latency: cfg.latency, readPool: cfg.readPool,
		store: storeB, key: a.key, feed: cfg.feed, journal: cfg.journal, freshness: cfg.freshness, derivationBudget: cfg.derivationBudget, name: "b"}, logger)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
		defer cancel()
		err = errors.Join(err, b.close(sctx))
	}()
	fmt.Fprintf(stderr, "absorb: replicas ready in %s (first derivations %s, %s); feed=%t journal=%t freshness=%s\n",
		time.Since(began).Round(time.Millisecond), a.readyIn.Round(time.Millisecond), b.readyIn.Round(time.Millisecond), cfg.feed, cfg.journal, cfg.freshness)

	c := &http.Client{Timeout: indexBudget}
	etag := ""
	var worst time.Duration
	for i := range cfg.absorb {
		name := fmt.Sprintf("Absorb.Run%d.Module%04d", began.Unix(), i)
		archive, err := tinyBundle(name)
		if err != nil {
			return err
		}
		// Its package node first, as a publication writes it.
		if err := putPackage(ctx, store, name); err != nil {
			return err
		}
		if _, err := a.served.Land(ctx, name, "1.0.0", archive); err != nil {
			return fmt.Errorf("landing %s on a: %w", name, err)
		}
		landed := time.Now()
		deadline := landed.Add(2*cfg.freshness + time.Minute)
		for {
			listed, err := indexLists(ctx, c, b.url, b.key, name, &etag)
			if err != nil {
				return err
			}
			if listed {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s was not in b's index %s after landing on a", name, time.Since(landed).Round(time.Millisecond))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		took := time.Since(landed)
		worst = max(worst, took)
		fmt.Fprintf(stdout, "absorb: %s in b's index %s after landing on a (b: %d derivations, the last took %s)\n",
			name, took.Round(time.Millisecond), b.derivations(), b.served.LastDerivation().Round(time.Millisecond))
	}
	fmt.Fprintf(stdout, "absorb summary: modules=%d feed=%t landings=%d worst_s=%.2f derivations_a=%d derivations_b=%d absorbed_b=%d last_derivation_b_s=%.1f\n",
		cfg.modules, cfg.feed, cfg.absorb, worst.Seconds(), a.derivations(), b.derivations(), b.served.Absorbed(), b.served.LastDerivation().Seconds())
	return nil
}

// indexLists reports whether the index at url lists module, revalidating
// with *etag as a consumer does (a 304 lists nothing new).
func indexLists(ctx context.Context, c *http.Client, url, key, module string, etag *string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if *etag != "" {
		req.Header.Set("If-None-Match", *etag)
	}
	resp, err := c.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified {
		return false, nil
	}
	*etag = resp.Header.Get("ETag")
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return false, errors.Join(err, fmt.Errorf("b's index: status %d", resp.StatusCode))
	}
	return strings.Contains(string(body), `"`+module+`"`), nil
}

// putPackage writes module's package node at the free tier.
func putPackage(ctx context.Context, store mesh.Store, module string) error {
	content, err := json.Marshal(registry.PackageContent{Tier: "free"})
	if err != nil {
		return err
	}
	_, err = store.Put(ctx, mesh.Node{Path: registry.DefaultSource + "/" + module, NodeType: registry.PackageNodeType, Content: content})
	return err
}
