package landing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"time"
)

// BundleInfo describes a bundle opened for download.
type BundleInfo struct {
	Module     string
	Version    string
	State      State // Landed or Shelved
	Generation string
	SHA256     string // hex digest the stream is checked against
	Size       int64
	LandedAt   time.Time
}

// OpenBundle opens the downloadable bundle of module at version. It resolves
// the module's latest record authoritatively (so a version another replica
// recorded a moment ago is found) on the read pool, and answers
// *NotFoundError unless that record serves exactly this version. The read
// slot is released once the bundle is open; the stream is checked against
// the recorded size and SHA-256 and ends with an *IntegrityError if it does
// not match. Generation directories are never modified, so a stream already
// open is unaffected by later records.
func (l *ModuleLanding) OpenBundle(ctx context.Context, module, version string) (io.ReadCloser, BundleInfo, error) {
	if err := ValidateModuleName(module); err != nil {
		return nil, BundleInfo{}, err
	}
	if err := ValidateVersion(version); err != nil {
		return nil, BundleInfo{}, err
	}
	var (
		rc   io.ReadCloser
		info BundleInfo
	)
	err := l.onReadPool(ctx, "bundle read "+module+"@"+version, func() error {
		key := moduleKey(module)
		rec, found, bad, err := l.scan.latest(ctx, key, nil)
		l.reportUnreadable(bad)
		if err != nil {
			return err
		}
		switch {
		case !found:
			return &NotFoundError{Module: module, Version: version, Reason: "the module has no records"}
		case !rec.State.Served():
			return &NotFoundError{Module: module, Version: version, Reason: "the module is " + string(rec.State)}
		case !equalNames(rec.Version, version):
			return &NotFoundError{Module: module, Version: version, Reason: "the served version is " + rec.Version}
		}
		info = BundleInfo{
			Module: rec.Module, Version: rec.Version, State: rec.State, Generation: rec.Generation,
			SHA256: rec.SHA256, Size: rec.Size, LandedAt: rec.LandedAt,
		}
		f, err := l.v.Open(ctx, bundlePath(key, rec.Generation))
		if err != nil {
			return volumeErr(ctx, "open bundle "+bundlePath(key, rec.Generation), err)
		}
		rc = &checkedBundle{rc: f, h: sha256.New(), info: info}
		return nil
	})
	if err != nil {
		return nil, BundleInfo{}, err
	}
	return rc, info, nil
}

// IntegrityError reports a bundle whose bytes do not match its record.
type IntegrityError struct {
	Module, Version, Generation string
	WantSHA256, GotSHA256       string
	WantSize, GotSize           int64
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("registry: bundle %s@%s (generation %s) does not match its record: %d bytes with sha256 %s, recorded %d bytes with sha256 %s",
		e.Module, e.Version, e.Generation, e.GotSize, e.GotSHA256, e.WantSize, e.WantSHA256)
}

// checkedBundle hashes what it streams and turns a mismatch into an error at
// the point it is known: past the recorded size, or at the end.
type checkedBundle struct {
	rc   io.ReadCloser
	h    hash.Hash
	n    int64
	info BundleInfo
	err  error
}

func (b *checkedBundle) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	b.h.Write(p[:n])
	b.n += int64(n)
	switch {
	case b.n > b.info.Size:
		b.err = b.mismatch()
		return n, b.err
	case err == io.EOF:
		if got := hex.EncodeToString(b.h.Sum(nil)); b.n != b.info.Size || got != b.info.SHA256 {
			b.err = b.mismatch()
			return n, b.err
		}
		b.err = io.EOF
	}
	return n, err
}

func (b *checkedBundle) mismatch() error {
	return &IntegrityError{
		Module: b.info.Module, Version: b.info.Version, Generation: b.info.Generation,
		WantSHA256: b.info.SHA256, GotSHA256: hex.EncodeToString(b.h.Sum(nil)),
		WantSize: b.info.Size, GotSize: b.n,
	}
}

func (b *checkedBundle) Close() error { return b.rc.Close() }
