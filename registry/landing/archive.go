package landing

import (
	"archive/zip"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"unicode"
)

// ArchiveProblem classifies why an archive was refused.
type ArchiveProblem int

const (
	// ArchiveCorrupt: not a readable zip, a checksum or size mismatch, an
	// encrypted entry or an unsupported compression method.
	ArchiveCorrupt ArchiveProblem = iota + 1
	// ArchiveTooLarge: the archive, one entry, or all entries expanded exceed a limit.
	ArchiveTooLarge
	// ArchiveTooManyEntries: more entries than the limit.
	ArchiveTooManyEntries
	// ArchiveSuspiciousRatio: an entry expands far more than real content does
	// (a decompression bomb).
	ArchiveSuspiciousRatio
	// ArchiveUnsafePath: an entry name that would leave the generation
	// directory or cannot be written portably.
	ArchiveUnsafePath
	// ArchiveNotRegular: a symbolic link, device, pipe or other non-regular entry.
	ArchiveNotRegular
	// ArchiveDuplicate: two entries for one path (compared without case), or a
	// file where another entry needs a directory.
	ArchiveDuplicate
	// ArchiveEmpty: no files at all.
	ArchiveEmpty
)

func (p ArchiveProblem) String() string {
	switch p {
	case ArchiveCorrupt:
		return "corrupt"
	case ArchiveTooLarge:
		return "too large"
	case ArchiveTooManyEntries:
		return "too many entries"
	case ArchiveSuspiciousRatio:
		return "suspicious compression ratio"
	case ArchiveUnsafePath:
		return "unsafe path"
	case ArchiveNotRegular:
		return "not a regular file"
	case ArchiveDuplicate:
		return "duplicate entry"
	case ArchiveEmpty:
		return "empty"
	}
	return fmt.Sprintf("ArchiveProblem(%d)", int(p))
}

// ArchiveError reports an archive refused by Land. A refused archive leaves
// nothing behind on the volume and does not change the activation.
type ArchiveError struct {
	Problem ArchiveProblem
	Entry   string // the offending entry's name, or "" for the archive as a whole
	Detail  string // what exactly is wrong
	Err     error  // underlying error, if any
}

func (e *ArchiveError) Error() string {
	var b strings.Builder
	b.WriteString("registry: archive refused")
	if e.Entry != "" {
		fmt.Fprintf(&b, ": entry %q", e.Entry)
	}
	fmt.Fprintf(&b, ": %s", e.Problem)
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *ArchiveError) Unwrap() error { return e.Err }

// archiveLimits bound what one archive may cost to accept.
type archiveLimits struct {
	maxArchive  int64 // bytes of the zip itself
	maxEntries  int
	maxFile     int64 // bytes of one entry, expanded
	maxExpanded int64 // bytes of all entries, expanded
	maxRatio    int64 // expanded/compressed, for one entry and for the whole archive ...
	ratioFloor  int64 // ... once it expands past this many bytes
	// maxEntryName bounds an entry's name in bytes: maxEntryNameLen, or
	// less on a NameLimitedVolume (entryNameLimit); 0 is maxEntryNameLen.
	maxEntryName int
}

// entryNameLimit is the longest entry name an archive may hold on v:
// maxEntryNameLen, or less where v holds shorter names, so that every
// entry fits beneath the longest generation directory of any module.
func entryNameLimit(v Volume) int {
	nv, ok := v.(NameLimitedVolume)
	if !ok {
		return maxEntryNameLen
	}
	longest := generationFilesDir(strings.Repeat("k", maxModuleNameLen), strings.Repeat("0", stampLen))
	return max(1, min(maxEntryNameLen, nv.MaxNameLen()-len(longest)-1))
}

// Limits on entry names, below every common file system's.
const (
	maxEntryNameLen = 1024
	maxSegmentLen   = 255
)

// archivePlan is a validated archive: what to create, in order.
type archivePlan struct {
	dirs  []string    // directory entries, as written
	files []*zip.File // regular files, in archive order
}

// planArchive checks everything that can be checked from the archive's
// headers, before anything is written or the landing lane is taken.
func planArchive(archive io.ReaderAt, size int64, lim archiveLimits) (*archivePlan, error) {
	if size > lim.maxArchive {
		return nil, &ArchiveError{Problem: ArchiveTooLarge,
			Detail: fmt.Sprintf("archive is %d bytes; the limit is %d", size, lim.maxArchive)}
	}
	zr, err := zip.NewReader(archive, size)
	if errors.Is(err, zip.ErrInsecurePath) && zr != nil {
		err = nil // our own name checks below say which entry and why
	}
	if err != nil {
		return nil, &ArchiveError{Problem: ArchiveCorrupt, Detail: "not a readable zip archive", Err: err}
	}
	if len(zr.File) > lim.maxEntries {
		return nil, &ArchiveError{Problem: ArchiveTooManyEntries,
			Detail: fmt.Sprintf("%d entries; the limit is %d", len(zr.File), lim.maxEntries)}
	}

	plan := &archivePlan{}
	kinds := map[string]bool{} // folded path -> is a directory
	var expanded int64
	for _, f := range zr.File {
		name := f.Name
		isDir := strings.HasSuffix(name, "/")
		clean := strings.TrimSuffix(name, "/")
		if reason := checkEntryName(clean, cmp.Or(lim.maxEntryName, maxEntryNameLen)); reason != "" {
			return nil, &ArchiveError{Problem: ArchiveUnsafePath, Entry: name, Detail: reason}
		}
		mode := f.Mode()
		if odd := mode.Type() &^ fs.ModeDir; odd != 0 {
			return nil, &ArchiveError{Problem: ArchiveNotRegular, Entry: name, Detail: "entry type " + odd.String()}
		}
		if isDir != mode.IsDir() {
			return nil, &ArchiveError{Problem: ArchiveCorrupt, Entry: name, Detail: "directory flag and name disagree"}
		}
		if f.Flags&0x1 != 0 {
			return nil, &ArchiveError{Problem: ArchiveCorrupt, Entry: name, Detail: "entry is encrypted"}
		}
		if f.Method != zip.Store && f.Method != zip.Deflate {
			return nil, &ArchiveError{Problem: ArchiveCorrupt, Entry: name,
				Detail: fmt.Sprintf("compression method %d is not supported", f.Method)}
		}
		if err := claimPath(kinds, clean, isDir); err != nil {
			err.Entry = name
			return nil, err
		}
		if isDir {
			if f.UncompressedSize64 != 0 {
				return nil, &ArchiveError{Problem: ArchiveCorrupt, Entry: name, Detail: "directory entry carries data"}
			}
			plan.dirs = append(plan.dirs, clean)
			continue
		}
		size := f.UncompressedSize64
		if size > uint64(lim.maxFile) {
			return nil, &ArchiveError{Problem: ArchiveTooLarge, Entry: name,
				Detail: fmt.Sprintf("expands to %d bytes; the limit per file is %d", size, lim.maxFile)}
		}
		expanded += int64(size)
		if expanded > lim.maxExpanded {
			return nil, &ArchiveError{Problem: ArchiveTooLarge, Entry: name,
				Detail: fmt.Sprintf("entries expand to more than %d bytes in all", lim.maxExpanded)}
		}
		if int64(size) > lim.ratioFloor && int64(size) > lim.maxRatio*max(int64(f.CompressedSize64), 1) {
			return nil, &ArchiveError{Problem: ArchiveSuspiciousRatio, Entry: name,
				Detail: fmt.Sprintf("%d compressed bytes expand to %d; the limit is %d:1", f.CompressedSize64, size, lim.maxRatio)}
		}
		plan.files = append(plan.files, f)
	}
	if len(plan.files) == 0 {
		return nil, &ArchiveError{Problem: ArchiveEmpty, Detail: "the archive holds no files"}
	}
	// The whole archive is judged as well as each entry: many entries each
	// under the floor can together expand far beyond what real content does.
	if expanded > lim.ratioFloor && expanded > lim.maxRatio*max(size, 1) {
		return nil, &ArchiveError{Problem: ArchiveSuspiciousRatio,
			Detail: fmt.Sprintf("the archive's %d bytes expand to %d in all; the limit is %d:1", size, expanded, lim.maxRatio)}
	}
	return plan, nil
}

// checkEntryName returns why a slash-separated entry name (without a trailing
// slash) must not be written beneath the generation directory, or "".
// maxLen bounds its bytes.
func checkEntryName(name string, maxLen int) string {
	switch {
	case name == "":
		return "empty name"
	case len(name) > maxLen:
		return fmt.Sprintf("name longer than %d bytes", maxLen)
	case strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) || hasDriveLetter(name):
		return "absolute path"
	case strings.Contains(name, `\`):
		return `contains a backslash, which is a separator on Windows`
	}
	for seg := range strings.SplitSeq(name, "/") {
		switch seg {
		case "..":
			return "contains '..'"
		case ".", "":
			return "not a clean path (empty or '.' segment)"
		}
		if len(seg) > maxSegmentLen {
			return fmt.Sprintf("segment longer than %d bytes", maxSegmentLen)
		}
		if reason := checkPortableSegment(seg); reason != "" {
			return reason
		}
	}
	if !fs.ValidPath(name) {
		return "not a valid path"
	}
	return ""
}

// claimPath records that clean is a file or directory, refusing a second
// claim on the same path and a file standing where another entry needs a
// directory. Two paths are the same when any case-insensitive volume could
// take them for one (collisionKey): not only ASCII case ("S.txt" and
// "s.txt") but every Unicode case fold ("S.txt" and "ſ.txt", "K" and the
// Kelvin sign), since the volume, not this rule, decides.
func claimPath(kinds map[string]bool, clean string, isDir bool) *ArchiveError {
	folded := collisionKey(clean)
	if prevDir, ok := kinds[folded]; ok {
		if !(prevDir && isDir) {
			return &ArchiveError{Problem: ArchiveDuplicate, Detail: "another entry already names this path"}
		}
		return nil
	}
	kinds[folded] = isDir
	for dir := path.Dir(folded); dir != "."; dir = path.Dir(dir) {
		if wasDir, ok := kinds[dir]; ok {
			if !wasDir {
				return &ArchiveError{Problem: ArchiveDuplicate, Detail: fmt.Sprintf("%q is a file in this archive", dir)}
			}
			continue
		}
		kinds[dir] = true
	}
	return nil
}

// extractArchive writes the plan's files beneath dir on v, streaming each
// entry (on a StreamingVolume, never whole in memory) through a bound, so
// that a header that lies about its size cannot make it write more than was
// accepted.
func extractArchive(ctx context.Context, v Volume, dir string, plan *archivePlan, lim archiveLimits) error {
	made := map[string]bool{}
	mkdir := func(p string) error {
		if p == "." || made[p] {
			return nil
		}
		if err := v.MkdirAll(ctx, path.Join(dir, p)); err != nil {
			return volumeErr(ctx, "create "+path.Join(dir, p), err)
		}
		for ; p != "."; p = path.Dir(p) {
			made[p] = true
		}
		return nil
	}
	for _, d := range plan.dirs {
		if err := mkdir(d); err != nil {
			return err
		}
	}
	var expanded int64
	for _, f := range plan.files {
		if err := mkdir(path.Dir(f.Name)); err != nil {
			return err
		}
		n, err := writeEntry(ctx, v, path.Join(dir, f.Name), f)
		if err != nil {
			return err
		}
		expanded += n
		if expanded > lim.maxExpanded {
			return &ArchiveError{Problem: ArchiveTooLarge, Entry: f.Name,
				Detail: fmt.Sprintf("entries expand to more than %d bytes in all", lim.maxExpanded)}
		}
	}
	return nil
}

// entryReader reads an entry through a bound of one byte past its declared
// size, and keeps what the entry's own reader said, so that a failed copy is
// told apart from a failed write.
type entryReader struct {
	r    io.Reader
	n    int64
	rerr error
}

func (e *entryReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.n += int64(n)
	if err != nil && err != io.EOF {
		e.rerr = err
	}
	return n, err
}

// writeEntry writes the zip entry f to name on v and returns its size. The
// staging directory it writes to is abandoned on any error, so a torn file
// is never seen.
func writeEntry(ctx context.Context, v Volume, name string, f *zip.File) (int64, error) {
	rc, err := f.Open()
	if err != nil {
		return 0, &ArchiveError{Problem: ArchiveCorrupt, Entry: f.Name, Detail: "cannot open entry", Err: err}
	}
	defer rc.Close()
	declared := int64(f.UncompressedSize64)
	er := &entryReader{r: io.LimitReader(rc, declared+1)}
	werr := writeStream(ctx, v, name, er)
	err = er.rerr
	// archive/zip answers ErrFormat for an entry expanding past its declared
	// size; without a data descriptor (flag bit 3) that is the only cause.
	overflow := er.n > declared || errors.Is(err, zip.ErrFormat) && f.Flags&0x8 == 0
	switch {
	case overflow:
		return 0, &ArchiveError{Problem: ArchiveSuspiciousRatio, Entry: f.Name,
			Detail: fmt.Sprintf("expands beyond the %d bytes its header declares", declared)}
	case errors.Is(err, zip.ErrChecksum) || errors.Is(err, zip.ErrFormat):
		return 0, &ArchiveError{Problem: ArchiveCorrupt, Entry: f.Name, Detail: "entry does not match its header", Err: err}
	case err != nil:
		return 0, &ArchiveError{Problem: ArchiveCorrupt, Entry: f.Name, Detail: "cannot read entry", Err: err}
	case werr != nil:
		return 0, volumeErr(ctx, "write "+name, werr)
	case er.n != declared:
		return 0, &ArchiveError{Problem: ArchiveCorrupt, Entry: f.Name,
			Detail: fmt.Sprintf("expands to %d bytes but its header declares %d", er.n, declared)}
	}
	return er.n, nil
}

// collisionKey maps every rune of s to the smallest rune of its Unicode
// case-fold orbit (unicode.SimpleFold), so that names any case-insensitive
// volume may treat as one share a key: S, s and ſ (U+017F) all become 'S';
// K, k and the Kelvin sign 'K'. It is a refusal rule for archive entries,
// wider than the name rule on purpose.
func collisionKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}
