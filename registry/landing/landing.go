package landing

import (
	"github.com/benbjohnson/clock"

	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for Options fields left zero.
const (
	DefaultReadPool    = 32
	DefaultMaxArchive  = 64 << 20
	DefaultMaxEntries  = 10_000
	DefaultMaxFileSize = 64 << 20
	DefaultMaxExpanded = 256 << 20
	DefaultMaxRatio    = 100
)

// ratioFloor is the size below which an entry's compression ratio is not
// judged: a small file that compresses well costs nothing to accept.
const ratioFloor = 1 << 20

// cleanupBudget bounds removing a refused landing's staging directory, which
// runs even when the landing's own context has ended.
const cleanupBudget = 30 * time.Second

// CommitBudget bounds a write's commit: the rename that makes its record
// visible (a landing's commit point) and, when that rename fails, the check
// of whether it took place. A commit starts only while the caller's context
// lives, and then runs on a context of its own, detached from the caller's
// and ended by this budget (on Options.Clock): once a write reaches its
// commit point, its caller's end does not cut it short, and the write
// reports what happened. A caller answering someone (the registry's publish
// route) waits up to this long past its own budget for a commit in progress.
const CommitBudget = 30 * time.Second

// Options configures a ModuleLanding. Zero fields take the defaults.
type Options struct {
	// ReadPool is how many authoritative reads may touch the volume at once.
	// Waiting for a slot is bounded by the reader's context. A derivation
	// (Activation, Reconcile) reads on ReadPool-1 of them, so its length is
	// modules × round trip / (ReadPool-1): with the default, 100,000 modules
	// at 2 ms per operation reconcile in about 10 s, well inside the served
	// snapshot's 30 s freshness. Default DefaultReadPool (32).
	ReadPool int
	// MaxArchive is the largest archive accepted, in bytes.
	MaxArchive int64
	// MaxEntries is the most entries an archive may hold.
	MaxEntries int
	// MaxFileSize is the largest one entry may expand to, in bytes.
	MaxFileSize int64
	// MaxExpanded is the most all entries together may expand to, in bytes.
	MaxExpanded int64
	// MaxRatio is the largest expanded-to-compressed ratio accepted, for an
	// entry that expands to more than 1 MiB and for the archive as a whole
	// once its entries expand to more than 1 MiB together.
	MaxRatio int64
	// Replica names this process in records and logs; default a random id.
	Replica string
	// Logger receives one line per write and per problem found; default slog.Default().
	Logger *slog.Logger
	// Clock stamps records, times the generation grace and bounds a
	// write's commit (CommitBudget); nil is the real clock.
	Clock clock.Clock
}

// ModuleLanding lands module versions on a Volume and derives the activation
// list from the records there. Several ModuleLandings on one volume root are
// replicas of one registry. It owns no goroutines: every method runs on its
// caller's goroutine (Activation's parallel readers return before it does)
// and is safe for concurrent use.
type ModuleLanding struct {
	v       Volume
	scan    scanner
	limits  archiveLimits
	log     *slog.Logger
	replica string
	lane    *slots // writes, one at a time
	reads   *slots // authoritative reads

	mu        sync.Mutex
	closed    bool
	done      chan struct{} // closed by Close: waiters give up
	active    int           // calls in progress
	idle      chan struct{} // closed once closed and no call is in progress
	lastStamp int64         // keeps this replica's stamps strictly increasing
	// journalNext is where this replica expects the journal's next free
	// sequence number (0: not known yet); a hint, checked by each claim.
	journalNext uint64

	clk clock.Clock
}

// OptionsError reports an argument or Options field NewModuleLanding
// cannot make a landing with.
type OptionsError struct {
	Setting string // e.g. "Options.ReadPool"
	Problem string
}

func (e *OptionsError) Error() string { return "registry: landing " + e.Setting + " " + e.Problem }

// NewModuleLanding returns a ModuleLanding on v. It does no I/O. An
// argument it cannot use is an *OptionsError naming it.
func NewModuleLanding(v Volume, opts Options) (*ModuleLanding, error) {
	if v == nil {
		return nil, &OptionsError{Setting: "Volume", Problem: "is nil (NewModuleLanding needs a Volume)"}
	}
	for _, o := range []struct {
		name string
		val  int64
	}{
		{"ReadPool", int64(opts.ReadPool)}, {"MaxArchive", opts.MaxArchive}, {"MaxEntries", int64(opts.MaxEntries)},
		{"MaxFileSize", opts.MaxFileSize}, {"MaxExpanded", opts.MaxExpanded}, {"MaxRatio", opts.MaxRatio},
	} {
		if o.val < 0 {
			return nil, &OptionsError{Setting: "Options." + o.name, Problem: fmt.Sprintf("is %d; it must not be negative (zero takes the default)", o.val)}
		}
	}
	if opts.Replica != "" {
		if reason := checkName(opts.Replica, 64, "._-"); reason != "" {
			return nil, &OptionsError{Setting: "Options.Replica", Problem: fmt.Sprintf("%q: %s", opts.Replica, reason)}
		}
	}
	orDefault := func(v, d int64) int64 {
		if v == 0 {
			return d
		}
		return v
	}
	l := &ModuleLanding{
		v:    v,
		scan: scanner{v: v},
		limits: archiveLimits{
			maxArchive:   orDefault(opts.MaxArchive, DefaultMaxArchive),
			maxEntries:   int(orDefault(int64(opts.MaxEntries), DefaultMaxEntries)),
			maxFile:      orDefault(opts.MaxFileSize, DefaultMaxFileSize),
			maxExpanded:  orDefault(opts.MaxExpanded, DefaultMaxExpanded),
			maxRatio:     orDefault(opts.MaxRatio, DefaultMaxRatio),
			ratioFloor:   ratioFloor,
			maxEntryName: entryNameLimit(v),
		},
		log:     opts.Logger,
		replica: opts.Replica,
		done:    make(chan struct{}),
		idle:    make(chan struct{}),
		clk:     opts.Clock,
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if l.clk == nil {
		l.clk = clock.New()
	}
	if l.replica == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		l.replica = "replica-" + hex.EncodeToString(b[:])
	}
	l.log = l.log.With("replica", l.replica)
	l.lane = newSlots("the landing lane", 1, l.done, l.log)
	l.reads = newSlots("the read pool", int(orDefault(int64(opts.ReadPool), DefaultReadPool)), l.done, l.log)
	return l, nil
}

// Replica is the name this ModuleLanding writes into its records.
func (l *ModuleLanding) Replica() string { return l.replica }

// Land publishes version of module from a zip archive held in memory; see
// LandArchive.
func (l *ModuleLanding) Land(ctx context.Context, module, version string, archive []byte) (Record, error) {
	rec, _, err := l.LandArchive(ctx, module, version, bytes.NewReader(archive), int64(len(archive)))
	return rec, err
}

// LandArchive publishes version of module from a zip archive of size bytes:
// its files are extracted into a fresh generation directory, the archive is
// copied beside them as the downloadable bundle, and then a Landed record is
// written. The archive is read through archive, never held whole in memory
// (on a Volume that is a StreamingVolume).
//
// A published version is immutable. The first landing of a version claims
// it on the volume (a directory renamed into place, which fails when the
// claim exists, so of concurrent landings on any replica exactly one
// claims); landing the same bytes again returns the existing record with
// created false and writes nothing (after an uninstall or a removal it
// lands them anew, created true); other bytes are refused with a
// *VersionConflictError naming the sha256 the version holds. Module names
// are compared without case: the first spelling landed is kept.
//
// Names and the archive are checked before the landing lane is taken; a
// refused landing returns a *NameError or *ArchiveError, leaves nothing
// behind and does not change the activation. After a landing, generations
// of the module that no record since its last removal references (left by
// landings that failed, or before a removal) are deleted once older than
// GenerationGrace.
func (l *ModuleLanding) LandArchive(ctx context.Context, module, version string, archive io.ReaderAt, size int64) (rec Record, created bool, err error) {
	if err := ValidateModuleName(module); err != nil {
		return Record{}, false, err
	}
	if err := ValidateVersion(version); err != nil {
		return Record{}, false, err
	}
	plan, err := planArchive(archive, size, l.limits)
	if err != nil {
		l.log.Warn("archive refused", "module", module, "version", version, "err", err)
		return Record{}, false, err
	}
	sum, err := digest(archive, size)
	if err != nil {
		return Record{}, false, &ArchiveError{Problem: ArchiveCorrupt, Detail: "reading the archive failed", Err: err}
	}
	rec, err = l.onLane(ctx, "landing "+module+"@"+version, func() (Record, error) {
		r, c, err := l.land(ctx, module, version, archive, size, sum, plan)
		created = c
		return r, err
	})
	return rec, created, err
}

// digest is the hex SHA-256 of the size bytes of r.
func digest(r io.ReaderAt, size int64) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, size)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (l *ModuleLanding) land(ctx context.Context, module, version string, archive io.ReaderAt, size int64, sum string, plan *archivePlan) (Record, bool, error) {
	key := moduleKey(module)
	latest, found, bad, err := l.scan.latest(ctx, key, nil)
	l.reportUnreadable(bad)
	if err != nil {
		return Record{}, false, err
	}
	if found {
		module = latest.Module // the first spelling is the module's name
	}
	gen, landedAt := l.stamp()
	claimed, spelled, err := l.claimVersion(ctx, key, module, version, gen, sum)
	if err != nil {
		return Record{}, false, err
	}
	// Versions compare with the name rule (ASCII case folding), as their
	// claims do: one version has one spelling, the one it was first
	// claimed under, whatever spelling a later publication gives.
	version = spelled
	if !claimed {
		// The version holds these bytes already: answer its record if one
		// since the module was last uninstalled or removed serves them. An
		// uninstall ends the walk too: answering a record from before it
		// would report the version published while nothing serves it.
		prev, ok, bad, err := l.scan.latest(ctx, key, func(r Record) bool {
			return r.State == Uninstalled || r.State.Served() && equalNames(r.Version, version) && r.SHA256 == sum
		})
		l.reportUnreadable(bad)
		if err != nil {
			return Record{}, false, err
		}
		if ok && prev.State.Served() {
			l.log.Info("module version already landed with these bytes; nothing written",
				"module", module, "version", version, "generation", prev.Generation)
			return prev, false, nil
		}
		// Claimed with these bytes but never recorded (a landing that failed
		// part way) or given up by an uninstall or a removal: land them again.
	}
	rec := Record{
		Module: module, State: Landed, Version: version, Generation: gen,
		SHA256: sum, Size: size, LandedAt: landedAt,
	}
	var written Record
	placeBytes := func() error { return l.placeBytes(ctx, key, gen, archive, size, plan) }
	record := func() (err error) {
		written, err = l.writeRecord(ctx, rec)
		return err
	}
	steps := [2]func() error{placeBytes, record}
	unclaim := func() {
		if claimed {
			l.removeQuietly(ctx, versionClaimDir(key, version))
		}
	}
	if err := steps[0](); err != nil {
		unclaim()
		l.log.Warn("landing failed; nothing was recorded", "module", module, "version", version, "err", err)
		return Record{}, false, err
	}
	if err := steps[1](); err != nil {
		var unknown *CommitUnknownError
		if errors.As(err, &unknown) {
			// The record may be in place: the claim stays with it.
			l.log.Error("landing's commit failed and whether it took place is unknown; the version may be served",
				"module", module, "version", version, "generation", generationDir(key, gen), "err", err)
			return Record{}, false, err
		}
		unclaim()
		l.log.Warn("landing failed after its bytes were placed; the generation is unrecorded and never served",
			"module", module, "version", version, "generation", generationDir(key, gen), "err", err)
		return Record{}, false, err
	}
	l.log.Info("module landed", "module", module, "version", version, "generation", gen,
		"files", len(plan.files), "bytes", size, "record", written.ID)
	if ctx.Err() == nil { // a commit that outlived its caller leaves the collection to the next landing
		l.collectGenerations(ctx, key, gen)
	}
	return written, true, nil
}

// placeBytes extracts into a staging directory and renames it into place, so
// that a generation directory only ever exists complete.
func (l *ModuleLanding) placeBytes(ctx context.Context, key, gen string, archive io.ReaderAt, size int64, plan *archivePlan) error {
	if _, ok := l.v.(ExclusiveVolume); ok {
		// Object storage has no rename: the generation is written where it
		// stays. Nothing reads a generation before a record names it, and
		// one a failed landing leaves is collected after GenerationGrace.
		return l.writeGeneration(ctx, generationDir(key, gen), archive, size, plan)
	}
	stage := path.Join(stagingDir, gen)
	files := path.Join(stage, filesName)
	if err := l.v.MkdirAll(ctx, files); err != nil {
		return l.abandon(ctx, stage, volumeErr(ctx, "create staging directory "+stage, err))
	}
	if err := extractArchive(ctx, l.v, files, plan, l.limits); err != nil {
		return l.abandon(ctx, stage, err)
	}
	if err := writeStream(ctx, l.v, path.Join(stage, bundleName), io.NewSectionReader(archive, 0, size)); err != nil {
		return l.abandon(ctx, stage, volumeErr(ctx, "write bundle", err))
	}
	if err := l.v.MkdirAll(ctx, generationsDir(key)); err != nil {
		return l.abandon(ctx, stage, volumeErr(ctx, "create "+generationsDir(key), err))
	}
	if err := l.v.Rename(ctx, stage, generationDir(key, gen)); err != nil {
		return l.abandon(ctx, stage, volumeErr(ctx, "move generation into place", err))
	}
	return nil
}

// writeGeneration writes a generation's files and bundle beneath dir,
// removing what it wrote when it fails.
func (l *ModuleLanding) writeGeneration(ctx context.Context, dir string, archive io.ReaderAt, size int64, plan *archivePlan) error {
	if err := extractArchive(ctx, l.v, path.Join(dir, filesName), plan, l.limits); err != nil {
		return l.abandon(ctx, dir, err)
	}
	if err := writeStream(ctx, l.v, path.Join(dir, bundleName), io.NewSectionReader(archive, 0, size)); err != nil {
		return l.abandon(ctx, dir, volumeErr(ctx, "write bundle", err))
	}
	return nil
}

// abandon removes a staging directory after a failed landing and returns err.
// The removal gets its own budget because the landing's context may be what ended it.
func (l *ModuleLanding) abandon(ctx context.Context, stage string, err error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
	defer cancel()
	if rmErr := l.v.RemoveAll(cctx, stage); rmErr != nil {
		l.log.Error("staging directory left behind", "staging", stage, "err", rmErr)
	}
	return err
}

// writeRecord writes r as a new record, through a temporary name and a
// rename so that no reader ever sees a partial record. The rename is the
// write's commit point: it starts only while ctx lives and runs detached
// from it, bounded by CommitBudget (see commit).
func (l *ModuleLanding) writeRecord(ctx context.Context, r Record) (Record, error) {
	key := moduleKey(r.Module)
	// The sequence number follows every record on the volume now, not this
	// replica's clock: a record sorts after every record its writer saw.
	ids, err := l.scan.recordIDs(ctx, key)
	if err != nil {
		return Record{}, err
	}
	stamp, at := l.stamp()
	r.ID, r.RecordedAt = newRecordIDFromStamp(nextSeq(ids), stamp), at
	r.Replica = l.replica
	data, err := encodeRecord(r)
	if err != nil {
		return Record{}, fmt.Errorf("registry: encode record: %w", err)
	}
	dir := recordsDir(key)
	final := path.Join(dir, r.ID+recordSuffix)
	if xv, ok := l.v.(ExclusiveVolume); ok {
		// Object storage: the record's conditional create is its commit.
		entry := JournalEntry{Module: r.Module, Record: r.ID, Replica: r.Replica}
		seq, err := l.journal(ctx, entry)
		if err != nil {
			return Record{}, err
		}
		if err := l.commit(ctx, final, func(cctx context.Context) error { return xv.CreateExclusive(cctx, final, data) }); err != nil {
			return Record{}, err
		}
		l.journalAgainIfOvertaken(ctx, seq, entry)
		return r, nil
	}
	tmp := path.Join(dir, ".tmp-"+r.ID+recordSuffix)
	if err := l.v.MkdirAll(ctx, dir); err != nil {
		return Record{}, volumeErr(ctx, "create "+dir, err)
	}
	if err := l.v.WriteFile(ctx, tmp, data); err != nil {
		l.removeQuietly(ctx, tmp)
		return Record{}, volumeErr(ctx, "write record "+tmp, err)
	}
	// The journal entry goes first: a replica tailing the journal learns of
	// the write even if this process dies right after its commit, before it
	// can announce it anywhere else (see journal.go).
	entry := JournalEntry{Module: r.Module, Record: r.ID, Replica: r.Replica}
	seq, err := l.journal(ctx, entry)
	if err != nil {
		l.removeQuietly(ctx, tmp)
		return Record{}, err
	}
	if err := l.commit(ctx, final, func(cctx context.Context) error { return l.v.Rename(cctx, tmp, final) }); err != nil {
		var unknown *CommitUnknownError
		if !errors.As(err, &unknown) {
			l.removeQuietly(ctx, tmp)
		}
		return Record{}, err
	}
	l.journalAgainIfOvertaken(ctx, seq, entry)
	return r, nil
}

// journalAgainIfOvertaken claims a second journal entry for a record
// committed after walkBacklog later entries were claimed (one volume
// operation finds out): a full walk that read the journal's head meanwhile
// may have listed the module before the commit and placed the next pass
// past seq, and without a new entry at the head no pass or tail would read
// the record until the next full walk (an hour). The write is done: a
// failure here is logged, not returned.
func (l *ModuleLanding) journalAgainIfOvertaken(ctx context.Context, seq uint64, e JournalEntry) {
	cctx, cancel := l.clk.WithTimeout(context.WithoutCancel(ctx), CommitBudget)
	defer cancel()
	// A read, not a Stat: on object storage a Stat of a missing key costs
	// a listing too.
	_, err := l.v.ReadFile(cctx, path.Join(journalEntryDir(seq+walkBacklog), journalEntry), maxEntryBytes)
	if IsTooLarge(err) || errors.Is(err, errNotRegular) {
		err = nil // there, if no entry of this build
	}
	if errors.Is(err, fs.ErrNotExist) {
		return // not overtaken: every walk since places its next pass at or before seq
	}
	if err == nil {
		_, err = l.journal(cctx, e)
	}
	if err != nil {
		l.log.Warn("a record committed late may be missed by replicas that walked meanwhile until their next full walk: its journal entry could not be claimed again",
			"module", e.Module, "record", e.Record, "seq", seq, "err", err)
	}
}

// commit places the record at final (place renames it there, or on an
// ExclusiveVolume creates it): the commit point. It
// does not start once ctx has ended (nothing is visible then). Once started
// it runs on its own context, detached from ctx and bounded by CommitBudget,
// so that a caller's end (a request's budget) never leaves a record in place
// behind a reported failure. A rename that fails is checked: if final exists
// the commit took place; if neither can be told (also when final is absent
// but the rename failed unanswered, IsUnavailable), *CommitUnknownError.
func (l *ModuleLanding) commit(ctx context.Context, final string, place func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return volumeErr(ctx, "commit record "+final+" (not started)", err)
	}
	cctx, cancel := l.clk.WithTimeout(context.WithoutCancel(ctx), CommitBudget)
	defer cancel()
	renameErr := place(cctx)
	if renameErr == nil {
		return nil
	}
	_, statErr := l.v.Stat(cctx, final)
	switch {
	case statErr == nil:
		l.log.Warn("placing a record (its commit) reported a failure but the record is in place; the write is done",
			"record", final, "err", renameErr)
		return nil
	case errors.Is(statErr, fs.ErrNotExist) && IsUnavailable(renameErr):
		// The volume gave no answer: the request may yet be applied (an
		// object store's PUT after its client gave up), so "not there yet"
		// is not "not written". statErr is not wrapped: the record is not
		// known to be absent.
		return &CommitUnknownError{Record: final, RenameErr: renameErr,
			CheckErr: fmt.Errorf("%v, but the volume did not answer the commit and may still apply it", statErr)}
	case errors.Is(statErr, fs.ErrNotExist):
		return volumeErr(cctx, "commit record "+final+" (commit budget "+CommitBudget.String()+")", renameErr)
	default:
		return &CommitUnknownError{Record: final, RenameErr: renameErr, CheckErr: statErr}
	}
}

// CommitUnknownError reports a write whose commit (the rename of its record
// into place) failed and whose outcome could not be checked within
// CommitBudget, or failed unanswered (IsUnavailable) with its record not
// yet found: the record may be in place and served, and the version keeps
// its claim. Landing the same bytes again is safe: a version that landed
// answers with its record.
type CommitUnknownError struct {
	Record    string // the record's path on the volume
	RenameErr error
	CheckErr  error
}

func (e *CommitUnknownError) Error() string {
	return fmt.Sprintf("registry: renaming record %s into place failed (%v) and whether it took place could not be checked (%v): the write may be served; land the same bytes again to find out",
		e.Record, e.RenameErr, e.CheckErr)
}

func (e *CommitUnknownError) Unwrap() []error { return []error{e.RenameErr, e.CheckErr} }

func (l *ModuleLanding) removeQuietly(ctx context.Context, name string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
	defer cancel()
	if err := l.v.RemoveAll(cctx, name); err != nil {
		l.log.Warn("temporary file left behind", "path", name, "err", err)
	}
}

// Shelve holds version of module: it stops being active but stays served for
// download. The version must have landed since the module was last removed.
func (l *ModuleLanding) Shelve(ctx context.Context, module, version string) (Record, error) {
	if err := ValidateModuleName(module); err != nil {
		return Record{}, err
	}
	if err := ValidateVersion(version); err != nil {
		return Record{}, err
	}
	return l.onLane(ctx, "shelving "+module+"@"+version, func() (Record, error) {
		landed, found, bad, err := l.scan.latest(ctx, moduleKey(module), func(r Record) bool {
			return r.State.Served() && equalNames(r.Version, version)
		})
		l.reportUnreadable(bad)
		if err != nil {
			return Record{}, err
		}
		if !found {
			return Record{}, &NotFoundError{Module: module, Version: version,
				Reason: "this version has not landed since the module was last removed"}
		}
		rec := landed
		rec.Module, rec.State = module, Shelved
		return l.writeState(ctx, rec)
	})
}

// Uninstall stops serving module. The bytes of its versions stay, so a later
// Shelve can serve one of them again.
func (l *ModuleLanding) Uninstall(ctx context.Context, module string) (Record, error) {
	return l.endModule(ctx, module, Uninstalled)
}

// Remove stops serving module and gives up its earlier versions: none can be
// shelved again. Generation directories are immutable and are not deleted
// here, so a download already streaming finishes.
//
// The versions' claims are kept: a version number is never reused (as on
// crates.io and npm), so a consumer that applied a version before the
// removal never meets other bytes under it. Landing a removed version again
// with other bytes is a *VersionConflictError naming the sha256 it holds;
// with the same bytes it lands anew (a new record and generation; created
// is true).
func (l *ModuleLanding) Remove(ctx context.Context, module string) (Record, error) {
	return l.endModule(ctx, module, Removed)
}

func (l *ModuleLanding) endModule(ctx context.Context, module string, state State) (Record, error) {
	if err := ValidateModuleName(module); err != nil {
		return Record{}, err
	}
	verb := "uninstalling "
	if state == Removed {
		verb = "removing "
	}
	return l.onLane(ctx, verb+module, func() (Record, error) {
		latest, found, bad, err := l.scan.latest(ctx, moduleKey(module), nil)
		l.reportUnreadable(bad)
		if err != nil {
			return Record{}, err
		}
		if !found || latest.State == Removed {
			return Record{}, &NotFoundError{Module: module, Reason: "the module has no records since it was last removed"}
		}
		return l.writeState(ctx, Record{Module: module, State: state})
	})
}

// writeState writes a record that carries no new bytes.
func (l *ModuleLanding) writeState(ctx context.Context, rec Record) (Record, error) {
	r, err := l.writeRecord(ctx, rec)
	if err != nil {
		return Record{}, err
	}
	l.log.Info("module "+string(r.State), "module", r.Module, "version", r.Version, "record", r.ID)
	return r, nil
}

// spelling returns the name module was first landed under (compared
// without case), or module itself when it has no records.
func (l *ModuleLanding) spelling(ctx context.Context, module string) (string, error) {
	name := module
	err := l.onReadPool(ctx, "spelling of "+module, func() error {
		rec, found, bad, err := l.scan.latest(ctx, moduleKey(module), nil)
		l.reportUnreadable(bad)
		if found {
			name = rec.Module
		}
		return err
	})
	return name, err
}

// onLane runs write on the landing lane, one write at a time.
func (l *ModuleLanding) onLane(ctx context.Context, holder string, write func() (Record, error)) (Record, error) {
	if err := l.enter(); err != nil {
		return Record{}, err
	}
	defer l.leave()
	release, err := l.lane.acquire(ctx, holder)
	if err != nil {
		return Record{}, err
	}
	defer release()
	return write()
}

// Activation derives the activation list from the records on the volume: the
// authoritative read. It lists the modules on one read slot, then reads the
// modules' records in parallel, each module on a read slot of its own, with
// at most ReadPool-1 modules at once (one when ReadPool is 1): a request's
// read waits for one module's read at most, never for the whole scan, and
// never behind a landing. It sees each landing either not at all or
// complete. Its cost is a fixed number of volume operations per module; a
// caller that reads often should serve a maintained snapshot instead of
// calling this per request. The goroutines it starts have returned when it
// returns; the first error (or ctx's end) stops the rest.
func (l *ModuleLanding) Activation(ctx context.Context) (Activation, error) {
	return l.Reconcile(ctx, Activation{})
}

// Reconcile derives the activation list as Activation does, but reads a
// module's record file only when the newest record its listing shows is not
// the record prev serves for it: one volume operation for an unchanged
// module instead of two, and no decoding. Records are written once under a
// unique ID and never rewritten, so a module whose newest record is the one
// prev holds serves that record still. prev is any earlier result of
// Activation or Reconcile, patched or not; the zero Activation reads every
// record, as Activation does. The result is what Activation would return
// at the same moment.
func (l *ModuleLanding) Reconcile(ctx context.Context, prev Activation) (Activation, error) {
	var keys []string
	err := l.onReadPool(ctx, "activation read", func() error {
		var err error
		keys, err = l.scan.moduleKeys(ctx)
		return err
	})
	if err != nil || len(keys) == 0 {
		return Activation{}, err
	}
	results, err := l.readModules(ctx, keys, prev)
	if err != nil {
		return Activation{}, err
	}
	var act Activation
	for _, f := range results {
		act.Unreadable = append(act.Unreadable, f.bad...)
		switch {
		case f.ok && f.rec.State.Served():
			act.Modules = append(act.Modules, f.rec)
		case f.ok:
			act.Ended = append(act.Ended, f.rec)
		}
	}
	l.reportUnreadable(act.Unreadable)
	return act, nil
}

// moduleRead is what readModules found for one module.
type moduleRead struct {
	rec  Record
	ok   bool
	bad  []RecordError
	last string // the newest record ID listed, readable or not
}

// readModules reads the newest record of each of keys in parallel, each
// module on a read slot of its own, with at most ReadPool-1 modules at once
// (one when ReadPool is 1), reading a record file only when the newest
// listed is not the one prev holds. The goroutines it starts have returned
// when it returns; the first error (or ctx's end) stops the rest.
func (l *ModuleLanding) readModules(ctx context.Context, keys []string, prev Activation) ([]moduleRead, error) {
	results := make([]moduleRead, len(keys))
	if len(keys) == 0 {
		return results, nil
	}
	workers := min(max(cap(l.reads.ch)-1, 1), len(keys))
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		firstErr error
		errOnce  sync.Once
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(keys) || ctx.Err() != nil {
					return
				}
				err := l.onReadPool(ctx, "activation read", func() error {
					r, ok, bad, last, err := l.scan.newest(ctx, keys[i], prev.latest(keys[i]))
					results[i] = moduleRead{rec: r, ok: ok, bad: bad, last: last}
					return err
				})
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if parent.Err() != nil { // a worker saw the end before reading: nothing may be missing silently
		return nil, volumeErr(parent, "read the modules' records", parent.Err())
	}
	return results, nil
}

// Latest returns module's latest readable record, whatever its state (a
// Removed or Uninstalled record says the module is not served), read on the
// read pool: the cost of absorbing one module's change, a fixed number of
// volume operations. found is false when the module has no records.
func (l *ModuleLanding) Latest(ctx context.Context, module string) (rec Record, found bool, err error) {
	if err := ValidateModuleName(module); err != nil {
		return Record{}, false, err
	}
	err = l.onReadPool(ctx, "record of "+module, func() error {
		var bad []RecordError
		rec, found, bad, err = l.scan.latest(ctx, moduleKey(module), nil)
		l.reportUnreadable(bad)
		return err
	})
	return rec, found, err
}

// onReadPool runs read on a read slot.
func (l *ModuleLanding) onReadPool(ctx context.Context, holder string, read func() error) error {
	if err := l.enter(); err != nil {
		return err
	}
	defer l.leave()
	release, err := l.reads.acquire(ctx, holder)
	if err != nil {
		return err
	}
	defer release()
	return read()
}

func (l *ModuleLanding) reportUnreadable(bad []RecordError) {
	for _, b := range bad {
		l.log.Warn("unreadable record skipped; the module is served from an older record", "record", b.Path, "err", b.Err)
	}
}

// stamp returns a new stamp and its time, strictly later than this replica's previous one.
func (l *ModuleLanding) stamp() (string, time.Time) {
	n := l.clk.Now().UnixNano()
	l.mu.Lock()
	n = max(n, l.lastStamp+1)
	l.lastStamp = n
	l.mu.Unlock()
	t := time.Unix(0, n).UTC()
	return newStamp(t), t
}

func (l *ModuleLanding) enter() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.active++
	return nil
}

func (l *ModuleLanding) leave() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active--
	if l.closed && l.active == 0 {
		close(l.idle)
	}
}

// Close refuses new calls and makes calls waiting for the lane or a read slot
// return ErrClosed. Calls already running finish on their callers'
// goroutines, bounded by their own contexts; Shutdown waits for them. The
// ModuleLanding owns no goroutines, so none outlives it.
func (l *ModuleLanding) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	close(l.done)
	if l.active == 0 {
		close(l.idle)
	}
	return nil
}

// Shutdown closes l and waits, no longer than ctx allows, until no call is
// running. A landing it waits for is not interrupted.
func (l *ModuleLanding) Shutdown(ctx context.Context) error {
	_ = l.Close()
	select {
	case <-l.idle:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		n := l.active
		l.mu.Unlock()
		return &WaitError{Waiting: fmt.Sprintf("running calls to finish (%d)", n), Holder: l.lane.describeHolders(), Err: context.Cause(ctx)}
	}
}

// NotFoundError reports a module or version that has nothing to serve.
type NotFoundError struct {
	Module  string
	Version string // "" when the module as a whole was asked for
	Reason  string
}

func (e *NotFoundError) Error() string {
	if e.Version == "" {
		return fmt.Sprintf("registry: module %q not found: %s", e.Module, e.Reason)
	}
	return fmt.Sprintf("registry: module %q version %q not found: %s", e.Module, e.Version, e.Reason)
}

// CheckArchive checks an archive against l's limits without landing it: it
// returns the *ArchiveError a landing of it would be refused with, or nil.
func (l *ModuleLanding) CheckArchive(archive io.ReaderAt, size int64) error {
	_, err := planArchive(archive, size, l.limits)
	return err
}

// Spelling returns the spelling module was first landed under (a module's
// identity does not depend on its case), or module itself when none was.
func (l *ModuleLanding) Spelling(ctx context.Context, module string) (string, error) {
	return l.spelling(ctx, module)
}
