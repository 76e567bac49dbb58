package landing

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// State is what a record says about a module.
type State string

const (
	// Landed: the version's files are in place and it is active and served.
	Landed State = "landed"
	// Shelved: a version landed earlier is held: its bytes stay and are still
	// served for download, but it is not active.
	Shelved State = "shelved"
	// Uninstalled: the module is not served; the bytes of its earlier
	// versions stay, and Shelve can bring one back.
	Uninstalled State = "uninstalled"
	// Removed: the module is gone; its earlier bytes may be collected and no
	// record before this one can be shelved again.
	Removed State = "removed"
)

// Served reports whether a module whose latest record has this state is in
// the activation list.
func (s State) Served() bool { return s == Landed || s == Shelved }

func (s State) valid() bool {
	switch s {
	case Landed, Shelved, Uninstalled, Removed:
		return true
	}
	return false
}

// Record is one immutable record of a module's state. The latest record of a
// module decides whether and which version of it is served.
type Record struct {
	Module     string    `json:"module"`
	State      State     `json:"state"`
	Version    string    `json:"version,omitempty"`    // served states only
	Generation string    `json:"generation,omitempty"` // the directory holding the version's bytes
	SHA256     string    `json:"sha256,omitempty"`     // hex digest of the bundle (the landed archive)
	Size       int64     `json:"size,omitempty"`       // bytes of the bundle
	LandedAt   time.Time `json:"landedAt,omitzero"`    // when the generation's bytes landed
	RecordedAt time.Time `json:"recordedAt"`           // when this record was written
	Replica    string    `json:"replica"`              // which ModuleLanding wrote it
	// ID names the record file. A record's ID starts with its module's
	// sequence number (see [Record.Seq]): one more than the highest among
	// the module's records its writer listed, so a record sorts after every
	// record its writer saw, whatever the clocks of the replicas say.
	// Records written concurrently on two replicas share a sequence number
	// and sort by the rest of the ID (a stamp and random bits): arbitrarily,
	// but the same on every replica. IDs sort in that order; IDs of records
	// written before sequence numbers (a bare stamp) sort before all others.
	ID string `json:"-"`
}

// Seq is the record's sequence number among its module's records (0 for a
// record written before they were kept).
func (r Record) Seq() uint64 {
	seq, _ := parseRecordID(r.ID)
	return seq
}

// FilesDir is the volume path of the served version's extracted files, or ""
// for a record that serves nothing.
func (r Record) FilesDir() string {
	if !r.State.Served() {
		return ""
	}
	return generationFilesDir(moduleKey(r.Module), r.Generation)
}

// Activation is the list of served modules derived from the records present
// at one moment: a value, safe to keep and share.
type Activation struct {
	// Modules holds the latest record of every served module, ordered by
	// module name without regard to case.
	Modules []Record
	// Ended holds the latest record of every module that has records but
	// is not served (its latest is Uninstalled or Removed), ordered as
	// Modules: the marker, with the sequence number that ended the module,
	// that keeps an older record read late from serving it again.
	Ended []Record
	// Unreadable lists record files that were skipped because they are no
	// record of this build (they do not decode, are too large, are not
	// regular files, or went away once listed); the module is served from
	// its next older record. A read that fails otherwise (an outage, a
	// refusal) fails the derivation instead.
	Unreadable []RecordError

	// journal is where the activation stands on the volume's journal
	// (ReconcileChanges); the zero value when it was not derived by one.
	journal journalMark
}

// Lookup returns the served record of module, compared without case.
func (a Activation) Lookup(module string) (Record, bool) {
	if r := a.lookup(module); r != nil {
		return *r, true
	}
	return Record{}, false
}

// lookup returns the served record of module, compared without case, in
// place: nil when module is not served.
func (a Activation) lookup(module string) *Record { return lookupIn(a.Modules, module) }

// latest returns the latest record a holds for module, served or ended.
func (a Activation) latest(module string) *Record {
	if r := lookupIn(a.Modules, module); r != nil {
		return r
	}
	return lookupIn(a.Ended, module)
}

func lookupIn(recs []Record, module string) *Record {
	i, ok := slices.BinarySearchFunc(recs, module, func(r Record, m string) int {
		return CompareNames(r.Module, m)
	})
	if !ok {
		return nil
	}
	return &recs[i]
}

// RecordError reports a record file that could not be used.
type RecordError struct {
	Path string // volume path of the record
	Err  error
}

func (e RecordError) Error() string { return fmt.Sprintf("registry: record %s: %v", e.Path, e.Err) }

func (e RecordError) Unwrap() error { return e.Err }

// Volume layout. Each module owns a directory named by its key; generations
// and records are never modified once renamed into place.
const (
	modulesDir   = "modules"
	stagingDir   = "staging"
	bundleName   = "bundle.zip"
	filesName    = "files"
	recordSuffix = ".json"
)

func recordsDir(key string) string         { return path.Join(modulesDir, key, "records") }
func generationsDir(key string) string     { return path.Join(modulesDir, key, "generations") }
func generationDir(key, gen string) string { return path.Join(generationsDir(key), gen) }
func generationFilesDir(key, gen string) string {
	return path.Join(generationDir(key, gen), filesName)
}
func bundlePath(key, gen string) string { return path.Join(generationDir(key, gen), bundleName) }

// stampLen is the length of a stamp: 20 decimal digits of Unix nanoseconds,
// '-', 16 hex digits of randomness.
const stampLen = 20 + 1 + 16

// newStamp names an event at t. Zero-padded nanoseconds make lexical order
// time order; the random part keeps two replicas stamping the same nanosecond
// from colliding (their order is then arbitrary but the same for every reader).
func newStamp(t time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return fmt.Sprintf("%020d-%016x", max(t.UnixNano(), 0), binary.BigEndian.Uint64(b[:]))
}

// parseStamp returns the time of a stamp, or false if s is not one.
func parseStamp(s string) (time.Time, bool) {
	if len(s) != stampLen || s[20] != '-' {
		return time.Time{}, false
	}
	n, err := strconv.ParseUint(s[:20], 10, 63)
	if err != nil {
		return time.Time{}, false
	}
	if _, err := hex.DecodeString(s[21:]); err != nil || foldName(s[21:]) != s[21:] {
		return time.Time{}, false
	}
	return time.Unix(0, int64(n)).UTC(), true
}

// seqPrefix starts a sequenced record ID: 's', 20 decimal digits of the
// module's sequence number, '-', then a stamp. 's' sorts after the digits a
// bare stamp (a record ID before sequence numbers) starts with.
const seqPrefix = 's'

// seqIDLen is the length of a sequenced record ID.
const seqIDLen = 1 + 20 + 1 + stampLen

// newRecordIDFromStamp names the record with sequence number seq and stamp.
func newRecordIDFromStamp(seq uint64, stamp string) string {
	return fmt.Sprintf("%c%020d-%s", seqPrefix, seq, stamp)
}

// parseRecordID returns the sequence number of a record ID (0 for a bare
// stamp, the IDs records had before sequence numbers), or false if id is
// not a record ID.
func parseRecordID(id string) (uint64, bool) {
	if _, ok := parseStamp(id); ok {
		return 0, true
	}
	if len(id) != seqIDLen || id[0] != seqPrefix || id[21] != '-' {
		return 0, false
	}
	seq, err := strconv.ParseUint(id[1:21], 10, 64)
	if err != nil || id[1] == '+' {
		return 0, false
	}
	if _, ok := parseStamp(id[22:]); !ok {
		return 0, false
	}
	return seq, true
}

// recordIDs returns the record IDs among a records directory's entries, oldest
// first. Anything else (a stray file, a temp file of a crashed writer) is ignored.
func recordIDs(entries []fs.DirEntry) []string {
	var ids []string
	for _, e := range sortedEntries(entries) {
		id, ok := strings.CutSuffix(e.Name(), recordSuffix)
		if !ok || e.IsDir() {
			continue
		}
		if _, ok := parseRecordID(id); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// nextSeq is the sequence number of a record written after the records ids
// (listed oldest first): one more than the highest.
func nextSeq(ids []string) uint64 {
	if len(ids) == 0 {
		return 1
	}
	seq, _ := parseRecordID(ids[len(ids)-1]) // the newest has the highest
	return seq + 1
}

// packed returns r with its strings in one allocation and its state one
// of the constants: a snapshot holds a record per module, and at 100,000
// modules six strings each would be 600,000 objects for every garbage
// collection to mark.
func (r Record) packed() Record {
	fields := [...]*string{&r.Module, &r.Version, &r.Generation, &r.SHA256, &r.Replica, &r.ID}
	n := 0
	for _, f := range fields {
		n += len(*f)
	}
	var b strings.Builder
	b.Grow(n)
	for _, f := range fields {
		b.WriteString(*f)
	}
	all := b.String()
	for _, f := range fields {
		*f, all = all[:len(*f)], all[len(*f):]
	}
	switch r.State {
	case Landed:
		r.State = Landed
	case Shelved:
		r.State = Shelved
	case Uninstalled:
		r.State = Uninstalled
	case Removed:
		r.State = Removed
	}
	return r
}

// recordFormat is the on-disk envelope; the version lets a later format be
// recognised instead of misread.
type recordFormat struct {
	Format int `json:"format"`
	Record
}

const currentRecordFormat = 1

func encodeRecord(r Record) ([]byte, error) {
	return json.MarshalIndent(recordFormat{Format: currentRecordFormat, Record: r}, "", "  ")
}

// MaxRecordBytes bounds a record file: encodeRecord writes a few hundred
// bytes (every field but the replica's name is a checked name, stamp or
// digest, and that name is at most 64 bytes), so a larger file is not one
// of this build's records. It is the bound of the volume's ReadFile of a
// record, so a larger file is refused before it is read into memory, and
// decodeRecord checks it again for a volume that reads more. The bound
// also keeps the strings of a chunk of records within the 32-bit offsets
// the registry's index packs them with.
const MaxRecordBytes = 64 << 10

// maxEntryBytes bounds a version claim or a journal entry, the landing's
// other small files: they hold fewer fields than a record.
const maxEntryBytes = MaxRecordBytes

// decodeRecord parses and checks a record read from key's records directory.
// A record is bad input like any other: it must name the module whose
// directory holds it and carry what its state needs.
func decodeRecord(key, id string, data []byte) (Record, error) {
	if len(data) > MaxRecordBytes {
		return Record{}, fmt.Errorf("record of %d bytes; a record is at most %d", len(data), MaxRecordBytes)
	}
	var f recordFormat
	if err := json.Unmarshal(data, &f); err != nil {
		return Record{}, fmt.Errorf("not a record: %w", err)
	}
	r := f.Record
	r.ID = id
	r = r.packed()
	switch {
	case f.Format != currentRecordFormat:
		return Record{}, fmt.Errorf("record format %d; this build reads format %d", f.Format, currentRecordFormat)
	case !r.State.valid():
		return Record{}, fmt.Errorf("unknown state %q", r.State)
	case moduleKey(r.Module) != key:
		return Record{}, fmt.Errorf("names module %q but is filed under %q", r.Module, key)
	}
	if err := ValidateModuleName(r.Module); err != nil {
		return Record{}, err
	}
	if !r.State.Served() {
		return r, nil
	}
	if err := ValidateVersion(r.Version); err != nil {
		return Record{}, err
	}
	if _, ok := parseStamp(r.Generation); !ok {
		return Record{}, fmt.Errorf("generation %q is not a generation name", r.Generation)
	}
	if d, err := hex.DecodeString(r.SHA256); err != nil || len(d) != 32 {
		return Record{}, fmt.Errorf("sha256 %q is not a hex SHA-256 digest", r.SHA256)
	}
	if r.Size < 0 {
		return Record{}, fmt.Errorf("negative size %d", r.Size)
	}
	return r, nil
}

// scanner reads records from a volume. Every method costs a fixed number of
// volume operations per module, never per record in the module's history
// (unless records are unreadable and older ones must be tried).
type scanner struct{ v Volume }

// moduleKeys lists the module directories: the first step of a
// derivation, which then reads per module one ReadDir of its records and one
// ReadFile of the latest record (latest).
func (s scanner) moduleKeys(ctx context.Context) ([]string, error) {
	entries, err := s.v.ReadDir(ctx, modulesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, volumeErr(ctx, "list modules", err)
	}
	var keys []string
	for _, e := range sortedEntries(entries) {
		key := e.Name()
		if !e.IsDir() || ValidateModuleName(key) != nil || moduleKey(key) != key {
			continue // not a module directory this package wrote
		}
		keys = append(keys, key)
	}
	return keys, nil
}

func (s scanner) latest(ctx context.Context, key string, want func(Record) bool) (r Record, found bool, bad []RecordError, err error) {
	ids, err := s.recordIDs(ctx, key)
	if err != nil {
		return Record{}, false, nil, err
	}
	return s.latestOf(ctx, key, ids, want)
}

// newest is latest(ctx, key, nil) for a caller that already holds known,
// a record of key read earlier (or nil): when the listing's newest record is
// known, it is the answer without reading it again.
// last is the newest record ID the listing showed, readable or not ("" for
// none): a record whose ID sorts at or before it had been committed.
func (s scanner) newest(ctx context.Context, key string, known *Record) (r Record, found bool, bad []RecordError, last string, err error) {
	ids, err := s.recordIDs(ctx, key)
	if err != nil {
		return Record{}, false, nil, "", err
	}
	if len(ids) > 0 {
		last = ids[len(ids)-1]
	}
	if known != nil && last != "" && last == known.ID {
		return *known, true, nil, last, nil
	}
	r, found, bad, err = s.latestOf(ctx, key, ids, nil)
	return r, found, bad, last, err
}

// recordIDs lists key's record IDs, oldest first; none for a module whose
// first landing has not been recorded yet.
func (s scanner) recordIDs(ctx context.Context, key string) ([]string, error) {
	entries, err := s.v.ReadDir(ctx, recordsDir(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, volumeErr(ctx, "list records of "+key, err)
	}
	return recordIDs(entries), nil
}

// notARecord reports whether a read of a record file failed because the
// file is not one this build wrote: larger than a record, not a regular
// file, or gone since it was listed.
func notARecord(err error) bool {
	return IsTooLarge(err) || errors.Is(err, errNotRegular) || errors.Is(err, fs.ErrNotExist)
}

// latestOf is latest over ids, key's record IDs listed oldest first.
func (s scanner) latestOf(ctx context.Context, key string, ids []string, want func(Record) bool) (r Record, found bool, bad []RecordError, err error) {
	for i := len(ids) - 1; i >= 0; i-- {
		p := path.Join(recordsDir(key), ids[i]+recordSuffix)
		data, err := s.v.ReadFile(ctx, p, MaxRecordBytes)
		if err != nil {
			// Only a file that is no record of this build is passed over
			// for the one beneath it. Any other failure (an outage, a
			// credential refused, a disk error) says nothing about the
			// record, which may end the module or replace its version:
			// serving the older one would serve what it ended.
			if !notARecord(err) {
				return Record{}, false, bad, volumeErr(ctx, "read record "+p, err)
			}
			bad = append(bad, RecordError{Path: p, Err: err})
			continue
		}
		rec, err := decodeRecord(key, ids[i], data)
		if err != nil {
			bad = append(bad, RecordError{Path: p, Err: err})
			continue
		}
		if want == nil || want(rec) {
			return rec, true, bad, nil
		}
		if rec.State == Removed {
			break
		}
	}
	return Record{}, false, bad, nil
}

// volumeErr turns a failed volume operation into a *WaitError when the
// caller's context ended it, so that the error names what was waited on.
func volumeErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return &WaitError{Waiting: "the volume (" + what + ")", Err: context.Cause(ctx), OpErr: err}
	}
	return fmt.Errorf("registry: %s: %w", what, err)
}
