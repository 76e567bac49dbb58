package landing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"time"
)

// GenerationGrace is how old an unreferenced generation directory must be
// before a landing deletes it: long enough that a landing on another
// replica, which places its bytes before it writes its record, has recorded
// them.
const GenerationGrace = 10 * time.Minute

// claimName is the file in a version's claim directory.
const claimName = "claim.json"

// versionsDir holds one claim directory per version a module has published.
func versionsDir(key string) string { return path.Join(modulesDir, key, "versions") }

// versionClaimDir is the claim directory of version, folded with the name
// rule (ASCII case folding) so that volumes with and without case agree on
// which versions exist.
func versionClaimDir(key, version string) string {
	return path.Join(versionsDir(key), foldName(version))
}

// versionClaim is what a claim directory says: the bytes a version holds.
type versionClaim struct {
	Module     string `json:"module"`
	Version    string `json:"version"`
	SHA256     string `json:"sha256"`
	Generation string `json:"generation"`
}

// VersionConflictError reports a landing of a version that was published
// before with other bytes. A published version is immutable: publish a new
// version instead.
type VersionConflictError struct {
	Module, Version string
	ExistingSHA256  string // what the version holds
	GivenSHA256     string // what was offered
}

func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("registry: %s@%s is already published with sha256 %s; a published version is immutable (these bytes have sha256 %s): publish a new version",
		e.Module, e.Version, e.ExistingSHA256, e.GivenSHA256)
}

// claimVersion claims version of the module key for the bytes sum. claimed
// is false when the version already holds sum; another sum is a
// *VersionConflictError. spelled is the version as its claim spells it
// (the spelling it was first claimed under): versions differing only in
// ASCII case are one version. The claim is a directory renamed into place, which
// fails when one exists (on an ExclusiveVolume, its file created with
// CreateExclusive), so of concurrent claims on one volume, from any
// replica, exactly one succeeds.
func (l *ModuleLanding) claimVersion(ctx context.Context, key, module, version, gen, sum string) (claimed bool, spelled string, err error) {
	dir := versionClaimDir(key, version)
	check := func(c versionClaim) (bool, string, error) {
		if c.Version == "" || !equalNames(c.Version, version) {
			c.Version = version // a claim from before the spelling was kept
		}
		if c.SHA256 != sum {
			return false, "", &VersionConflictError{Module: module, Version: c.Version, ExistingSHA256: c.SHA256, GivenSHA256: sum}
		}
		return false, c.Version, nil
	}
	existing, ok, err := l.readClaim(ctx, dir)
	if err != nil {
		return false, "", err
	}
	if ok {
		return check(existing)
	}
	// A version landed before claims were kept is claimed by its record.
	prev, found, bad, err := l.scan.latest(ctx, key, func(r Record) bool {
		return r.State.Served() && equalNames(r.Version, version)
	})
	l.reportUnreadable(bad)
	if err != nil {
		return false, "", err
	}
	claim := versionClaim{Module: module, Version: version, SHA256: sum, Generation: gen}
	if found {
		claim = versionClaim{Module: prev.Module, Version: prev.Version, SHA256: prev.SHA256, Generation: prev.Generation}
	}
	data, err := json.MarshalIndent(claim, "", "  ")
	if err != nil {
		return false, "", fmt.Errorf("registry: encode version claim: %w", err)
	}
	if xv, ok := l.v.(ExclusiveVolume); ok {
		// Object storage: the claim is a conditional create of its file.
		if err := xv.CreateExclusive(ctx, path.Join(dir, claimName), data); err != nil {
			if !errors.Is(err, fs.ErrExist) {
				return false, "", volumeErr(ctx, "claim "+dir, err)
			}
			// Another landing claimed it first: its claim decides.
			existing, ok, err := l.readClaim(ctx, dir)
			if err != nil {
				return false, "", err
			}
			if !ok {
				return false, "", fmt.Errorf("registry: claim %s: the store refused it as existing but it cannot be read", dir)
			}
			return check(existing)
		}
		if found {
			return check(claim)
		}
		return true, version, nil
	}
	stage := path.Join(stagingDir, gen+"-claim")
	if err := l.v.MkdirAll(ctx, stage); err != nil {
		return false, "", l.abandon(ctx, stage, volumeErr(ctx, "create staging directory "+stage, err))
	}
	if err := l.v.WriteFile(ctx, path.Join(stage, claimName), data); err != nil {
		return false, "", l.abandon(ctx, stage, volumeErr(ctx, "write version claim", err))
	}
	if err := l.v.MkdirAll(ctx, versionsDir(key)); err != nil {
		return false, "", l.abandon(ctx, stage, volumeErr(ctx, "create "+versionsDir(key), err))
	}
	if renameErr := l.v.Rename(ctx, stage, dir); renameErr != nil {
		_ = l.abandon(ctx, stage, nil)
		// Another landing claimed it first: its claim decides.
		if existing, ok, err := l.readClaim(ctx, dir); err == nil && ok {
			return check(existing)
		}
		return false, "", volumeErr(ctx, "claim "+dir, renameErr)
	}
	if found {
		return check(claim)
	}
	return true, version, nil
}

// readClaim reads the claim in dir; ok is false when there is none.
func (l *ModuleLanding) readClaim(ctx context.Context, dir string) (versionClaim, bool, error) {
	data, err := l.v.ReadFile(ctx, path.Join(dir, claimName), maxEntryBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return versionClaim{}, false, nil
	}
	if IsTooLarge(err) {
		return versionClaim{}, false, fmt.Errorf("registry: version claim %s is unreadable (%v); remove it to publish that version again", dir, err)
	}
	if err != nil {
		return versionClaim{}, false, volumeErr(ctx, "read version claim "+dir, err)
	}
	var c versionClaim
	if err := json.Unmarshal(data, &c); err != nil || c.SHA256 == "" {
		return versionClaim{}, false, fmt.Errorf("registry: version claim %s is unreadable (%v); remove it to publish that version again", dir, err)
	}
	return c, true, nil
}

// collectGenerations deletes the generation directories of the module key
// that no record since its last removal references and that are older than
// GenerationGrace, by this replica's clock against their stamps and by the
// volume's own clock against their modification times (as of landed, the
// generation this landing just placed): a replica whose clock runs ahead,
// or whose peer's runs behind, never takes a generation another replica
// placed a moment ago and is about to record. It never fails a landing:
// problems are logged, and when any record cannot be read nothing is
// deleted.
func (l *ModuleLanding) collectGenerations(ctx context.Context, key, landed string) {
	entries, err := l.v.ReadDir(ctx, generationsDir(key))
	if err != nil {
		l.log.Warn("old generations not collected", "module", key, "err", err)
		return
	}
	refs, err := l.scan.referenced(ctx, key)
	if err != nil {
		l.log.Warn("old generations not collected", "module", key, "err", err)
		return
	}
	newest, err := l.v.Stat(ctx, generationDir(key, landed))
	if err != nil {
		l.log.Warn("old generations not collected: the volume's time is not known", "module", key, "err", err)
		return
	}
	volumeNow := newest.ModTime()
	now := l.clk.Now()
	for _, e := range entries {
		gen := e.Name()
		at, ok := parseStamp(gen)
		if !ok || !e.IsDir() || refs[gen] || now.Sub(at) < GenerationGrace {
			continue
		}
		info, err := e.Info()
		if err == nil && info.ModTime().IsZero() {
			// An object store lists a directory without a time: ask for
			// that of the objects beneath it.
			info, err = l.v.Stat(ctx, generationDir(key, gen))
		}
		if err != nil || volumeNow.Sub(info.ModTime()) < GenerationGrace {
			continue // recent by the volume's clock (or not known): another replica may record it
		}
		if err := l.v.RemoveAll(ctx, generationDir(key, gen)); err != nil {
			l.log.Warn("old generation not collected", "generation", generationDir(key, gen), "err", err)
			continue
		}
		l.log.Info("unreferenced generation collected", "generation", generationDir(key, gen))
	}
}

// referenced returns the generations that records of the module key since
// its last removal name (the ones Shelve can still serve). It fails when a
// record cannot be read, since that record might name one.
func (s scanner) referenced(ctx context.Context, key string) (map[string]bool, error) {
	entries, err := s.v.ReadDir(ctx, recordsDir(key))
	if err != nil {
		return nil, volumeErr(ctx, "list records of "+key, err)
	}
	refs := map[string]bool{}
	ids := recordIDs(entries)
	for i := len(ids) - 1; i >= 0; i-- {
		p := path.Join(recordsDir(key), ids[i]+recordSuffix)
		data, err := s.v.ReadFile(ctx, p, MaxRecordBytes)
		if err != nil && notARecord(err) {
			return nil, RecordError{Path: p, Err: err}
		}
		if err != nil {
			return nil, volumeErr(ctx, "read record "+p, err)
		}
		rec, err := decodeRecord(key, ids[i], data)
		if err != nil {
			return nil, RecordError{Path: p, Err: err}
		}
		if rec.State == Removed {
			break
		}
		if rec.Generation != "" {
			refs[rec.Generation] = true
		}
	}
	return refs, nil
}
