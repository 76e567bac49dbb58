package landing

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"hash/crc32"
	"io/fs"
	"testing"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func deflated(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func file(name string, body string) testkit.Entry {
	return testkit.Entry{Name: name, Body: []byte(body)}
}

// archiveCase is an archive refused, and its acceptable twin.
type archiveCase struct {
	name    string
	opts    Options
	bad     []byte
	good    []byte
	problem ArchiveProblem
	entry   string
}

func TestUnsafeArchivesAreRefusedAndLeaveNothingBehind(t *testing.T) {
	zeros := func(n int) []byte { return make([]byte, n) }
	bomb := zeros(2 * ratioFloor)
	incompressible := testkit.RandomBytes(1 << 20)
	// lying declares a size of its choosing; only reading the entry tells the truth.
	lying := func(declared int, data []byte) testkit.Entry {
		body := deflated(t, data)
		return testkit.Entry{Header: &zip.FileHeader{
			Name: "lib/small.txt", Method: zip.Deflate,
			UncompressedSize64: uint64(declared), CompressedSize64: uint64(len(body)),
			CRC32: crc32.ChecksumIEEE(data[:min(declared, len(data))]),
		}, Body: body}
	}
	badCRC := func(crc uint32) testkit.Entry {
		body := []byte("hello")
		return testkit.Entry{Header: &zip.FileHeader{
			Name: "lib/hello.txt", Method: zip.Store,
			UncompressedSize64: uint64(len(body)), CompressedSize64: uint64(len(body)), CRC32: crc,
		}, Body: body}
	}

	// Each case pairs a refused archive with its nearest acceptable twin: the
	// twin landing under the same options is the control that the refusal
	// is caused by what differs, not by the setup.
	cases := []archiveCase{
		{name: "parent segment", bad: testkit.Zip(t, file("../evil.txt", "x")), good: testkit.Zip(t, file("evil.txt", "x")),
			problem: ArchiveUnsafePath, entry: "../evil.txt"},
		{name: "parent segment after a directory", bad: testkit.Zip(t, file("lib/ok.txt", "x"), file("lib/../../evil.txt", "x")),
			good: testkit.Zip(t, file("lib/ok.txt", "x"), file("lib/evil.txt", "x")), problem: ArchiveUnsafePath, entry: "lib/../../evil.txt"},
		{name: "absolute path", bad: testkit.Zip(t, file("/etc/evil", "x")), good: testkit.Zip(t, file("etc/evil", "x")),
			problem: ArchiveUnsafePath, entry: "/etc/evil"},
		{name: "UNC path", bad: testkit.Zip(t, file("//server/share/evil", "x")), good: testkit.Zip(t, file("server/share/evil", "x")),
			problem: ArchiveUnsafePath, entry: "//server/share/evil"},
		{name: "backslash parent", bad: testkit.Zip(t, file(`..\evil.txt`, "x")), good: testkit.Zip(t, file("evil.txt", "x")),
			problem: ArchiveUnsafePath, entry: `..\evil.txt`},
		{name: "backslash inside a name", bad: testkit.Zip(t, file(`lib\..\..\evil.txt`, "x")), good: testkit.Zip(t, file("lib/evil.txt", "x")),
			problem: ArchiveUnsafePath, entry: `lib\..\..\evil.txt`},
		{name: "drive letter", bad: testkit.Zip(t, file("C:/evil.txt", "x")), good: testkit.Zip(t, file("C/evil.txt", "x")),
			problem: ArchiveUnsafePath, entry: "C:/evil.txt"},
		{name: "drive-relative", bad: testkit.Zip(t, file("C:evil.txt", "x")), good: testkit.Zip(t, file("Cevil.txt", "x")),
			problem: ArchiveUnsafePath, entry: "C:evil.txt"},
		{name: "reserved device name", bad: testkit.Zip(t, file("lib/CON.txt", "x")), good: testkit.Zip(t, file("lib/CONE.txt", "x")),
			problem: ArchiveUnsafePath, entry: "lib/CON.txt"},
		{name: "dot segment", bad: testkit.Zip(t, file("lib/./a.txt", "x")), good: testkit.Zip(t, file("lib/a.txt", "x")),
			problem: ArchiveUnsafePath, entry: "lib/./a.txt"},
		{name: "symlink", bad: testkit.Zip(t, file("lib/a.txt", "x"), testkit.Entry{Name: "lib/link", Body: []byte("/etc/passwd"), Mode: fs.ModeSymlink | 0o777}),
			good: testkit.Zip(t, file("lib/a.txt", "x"), file("lib/link", "/etc/passwd")), problem: ArchiveNotRegular, entry: "lib/link"},
		{name: "symlinked directory then a file through it",
			bad:  testkit.Zip(t, testkit.Entry{Name: "lib", Body: []byte("/etc"), Mode: fs.ModeSymlink | 0o777}, file("lib/passwd", "x")),
			good: testkit.Zip(t, file("lib/passwd", "x")), problem: ArchiveNotRegular, entry: "lib"},
		{name: "named pipe", bad: testkit.Zip(t, testkit.Entry{Name: "fifo", Mode: fs.ModeNamedPipe | 0o644}), good: testkit.Zip(t, file("fifo", "")),
			problem: ArchiveNotRegular, entry: "fifo"},
		{name: "device", bad: testkit.Zip(t, testkit.Entry{Name: "dev", Mode: fs.ModeDevice | 0o644}), good: testkit.Zip(t, file("dev", "")),
			problem: ArchiveNotRegular, entry: "dev"},
		{name: "archive over the size limit", opts: Options{MaxArchive: 4096},
			bad:  testkit.Zip(t, testkit.Entry{Name: "blob", Body: testkit.RandomBytes(8192), Store: true}),
			good: testkit.Zip(t, testkit.Entry{Name: "blob", Body: testkit.RandomBytes(1024), Store: true}), problem: ArchiveTooLarge},
		{name: "too many entries", opts: Options{MaxEntries: 4},
			bad:  testkit.Zip(t, file("a", "1"), file("b", "2"), file("c", "3"), file("d", "4"), file("e", "5")),
			good: testkit.Zip(t, file("a", "1"), file("b", "2"), file("c", "3"), file("d", "4")), problem: ArchiveTooManyEntries},
		{name: "file over the per-file limit", opts: Options{MaxFileSize: 1024},
			bad:  testkit.Zip(t, testkit.Entry{Name: "big", Body: zeros(1025)}),
			good: testkit.Zip(t, testkit.Entry{Name: "big", Body: zeros(1024)}), problem: ArchiveTooLarge, entry: "big"},
		{name: "expanded total over the limit", opts: Options{MaxExpanded: 4096},
			bad:  testkit.Zip(t, testkit.Entry{Name: "a", Body: zeros(2000)}, testkit.Entry{Name: "b", Body: zeros(2000)}, testkit.Entry{Name: "c", Body: zeros(2000)}),
			good: testkit.Zip(t, testkit.Entry{Name: "a", Body: zeros(2000)}, testkit.Entry{Name: "b", Body: zeros(2000)}), problem: ArchiveTooLarge, entry: "c"},
		{name: "decompression bomb", bad: testkit.Zip(t, testkit.Entry{Name: "bomb", Body: bomb}),
			good: testkit.Zip(t, testkit.Entry{Name: "bomb", Body: zeros(ratioFloor)}), problem: ArchiveSuspiciousRatio, entry: "bomb"},
		// 255 entries of 1 MiB of zeros each pass the per-entry check and
		// together expand 256 MB from 287 KB; the whole archive is judged too.
		// Here the shape is the same at a size a test can build.
		{name: "many entries under the ratio floor that together expand far beyond their archive",
			bad:  testkit.Zip(t, testkit.Entry{Name: "a", Body: zeros(ratioFloor / 2)}, testkit.Entry{Name: "b", Body: zeros(ratioFloor / 2)}, testkit.Entry{Name: "c", Body: zeros(ratioFloor / 2)}),
			good: testkit.Zip(t, testkit.Entry{Name: "a", Body: zeros(ratioFloor / 2)}, testkit.Entry{Name: "b", Body: zeros(ratioFloor / 2)}), problem: ArchiveSuspiciousRatio},
		{name: "header that understates the expanded size",
			bad:     testkit.Zip(t, file("lib/first.txt", "written before the lie is found"), lying(10, incompressible)),
			good:    testkit.Zip(t, file("lib/first.txt", "written before the lie is found"), lying(1<<20, incompressible)),
			problem: ArchiveSuspiciousRatio, entry: "lib/small.txt"},
		{name: "checksum mismatch", bad: testkit.Zip(t, file("lib/a.txt", "x"), badCRC(crc32.ChecksumIEEE([]byte("hellO")))),
			good: testkit.Zip(t, file("lib/a.txt", "x"), badCRC(crc32.ChecksumIEEE([]byte("hello")))), problem: ArchiveCorrupt, entry: "lib/hello.txt"},
		{name: "same path twice", bad: testkit.Zip(t, file("a.txt", "1"), file("a.txt", "2")), good: testkit.Zip(t, file("a.txt", "1"), file("b.txt", "2")),
			problem: ArchiveDuplicate, entry: "a.txt"},
		{name: "same path in another case", bad: testkit.Zip(t, file("A.txt", "1"), file("a.txt", "2")), good: testkit.Zip(t, file("A.txt", "1"), file("b.txt", "2")),
			problem: ArchiveDuplicate, entry: "a.txt"},
		{name: "file where a directory is needed", bad: testkit.Zip(t, file("lib", "1"), file("lib/a.txt", "2")),
			good: testkit.Zip(t, file("lib2", "1"), file("lib/a.txt", "2")), problem: ArchiveDuplicate, entry: "lib/a.txt"},
		{name: "not a zip", bad: []byte("PK\x03\x04 certainly not a zip"), good: testkit.Zip(t, file("a.txt", "1")), problem: ArchiveCorrupt},
		{name: "no files", bad: testkit.Zip(t, testkit.Entry{Name: "lib/", Mode: fs.ModeDir | 0o755}),
			good: testkit.Zip(t, testkit.Entry{Name: "lib/", Mode: fs.ModeDir | 0o755}, file("lib/a.txt", "1")), problem: ArchiveEmpty},
	}
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		testRefusedArchives(t, k, cases)
	})
}

func testRefusedArchives(t *testing.T, k volumeKind, cases []archiveCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			v := k.openVolume(t)
			l := newLanding(t, v, tc.opts)
			_, err := l.Land(ctx, "Target", "1.0.0", testkit.Zip(t, file("lib/a.txt", "previous")))
			require.NoError(t, err)
			before := volumeTree(t, v)
			actBefore, err := l.Activation(ctx)
			require.NoError(t, err)

			_, err = l.Land(ctx, "Target", "2.0.0", tc.bad)
			var ae *ArchiveError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tc.problem, ae.Problem, "%v", err)
			assert.Equal(t, tc.entry, ae.Entry)
			assert.Equal(t, before, volumeTree(t, v), "a refused archive leaves nothing behind")
			actAfter, err := l.Activation(ctx)
			require.NoError(t, err)
			assert.Equal(t, actBefore, actAfter, "a refused archive leaves the activation as it was")

			_, err = l.Land(ctx, "Target", "2.0.0", tc.good)
			require.NoError(t, err, "control: the acceptable twin lands under the same options")
			assert.NotEqual(t, before, volumeTree(t, v))
		})
	}
}
