package landing

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshrx/meshrx/internal/testkit"
)

// FuzzAnArchiveIsRefusedWithATypedErrorOrWrittenSafely holds for any bytes
// offered as a module archive: planning and writing it never panic, a
// refusal is an *ArchiveError, and what is written lies beneath the
// generation directory, as regular files with portable names (no
// backslash, no '..'), each within the per-file limit and all within the
// expanded limit, whatever the headers claim. `go test` runs the seeds (a
// valid archive, and archives refused for their names, types, sizes and
// lies); `go test -fuzz FuzzAnArchive ./registry/landing` searches further.
// Negative control (run): without checkEntryName's backslash rule the
// seed named `lib\..\..\evil.txt` is written under that name and fails.
func FuzzAnArchiveIsRefusedWithATypedErrorOrWrittenSafely(f *testing.F) {
	t := f
	for _, seed := range [][]byte{
		testkit.ModuleArchive(t, "Fuzz", "1.0.0", 3),
		testkit.Zip(t, file("lib/ok.txt", "x"), file(`lib\..\..\evil.txt`, "x")),
		testkit.Zip(t, file("../evil.txt", "x")),
		testkit.Zip(t, file("lib/a.txt", "x"), testkit.Entry{Name: "lib/link", Body: []byte("/etc/passwd"), Mode: fs.ModeSymlink | 0o777}),
		testkit.Zip(t, file("S.txt", "x"), file("s.txt", "y")),
		testkit.Zip(t, file("a", "x"), file("a/b", "y")),
		testkit.Zip(t, testkit.Entry{Name: "big", Body: make([]byte, 5000)}),
		testkit.Zip(t, lyingEntry(t, 10, testkit.RandomBytes(6000))),
		[]byte("PK\x05\x06" + strings.Repeat("\x00", 18)),
		nil,
	} {
		f.Add(seed)
	}
	lim := archiveLimits{maxArchive: 1 << 20, maxEntries: 64, maxFile: 4096, maxExpanded: 8192, maxRatio: 100, ratioFloor: 1024}
	f.Fuzz(func(t *testing.T, archive []byte) {
		plan, err := planArchive(bytes.NewReader(archive), int64(len(archive)), lim)
		var ae *ArchiveError
		if err != nil {
			if !errors.As(err, &ae) {
				t.Fatalf("refused with %T, not an *ArchiveError: %v", err, err)
			}
			return
		}
		root := t.TempDir()
		v := DirVolume(root)
		defer v.(interface{ Close() error }).Close()
		if err := v.MkdirAll(t.Context(), "gen"); err != nil {
			t.Fatal(err)
		}
		if err := extractArchive(t.Context(), v, "gen", plan, lim); err != nil && !errors.As(err, &ae) {
			t.Fatalf("writing refused with %T, not an *ArchiveError: %v", err, err)
		}
		var total int64
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == root {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if rel != "gen" && !strings.HasPrefix(rel, "gen/") {
				t.Errorf("%s written outside the generation directory", rel)
			}
			if strings.Contains(rel, `\`) || strings.Contains("/"+rel+"/", "/../") {
				t.Errorf("%q is not a portable name", rel)
			}
			info, err := os.Lstat(p)
			if err != nil {
				return err
			}
			switch {
			case info.IsDir():
			case !info.Mode().IsRegular():
				t.Errorf("%s is a %v, not a regular file", rel, info.Mode().Type())
			case info.Size() > lim.maxFile:
				t.Errorf("%s holds %d bytes; the limit per file is %d", rel, info.Size(), lim.maxFile)
			default:
				total += info.Size()
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if total > lim.maxExpanded {
			t.Errorf("%d bytes written; the limit is %d", total, lim.maxExpanded)
		}
	})
}

// lyingEntry is an entry whose header declares declared bytes for data.
func lyingEntry(t testing.TB, declared int, data []byte) testkit.Entry {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	if err == nil {
		_, err = w.Write(data)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return testkit.Entry{Header: &zip.FileHeader{
		Name: "lib/small.txt", Method: zip.Deflate,
		UncompressedSize64: uint64(declared), CompressedSize64: uint64(buf.Len()),
		CRC32: crc32.ChecksumIEEE(data[:min(declared, len(data))]),
	}, Body: buf.Bytes()}
}
