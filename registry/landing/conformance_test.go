package landing

import (
	"context"
	"errors"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// volumeKind is a member of the conformance table: a Volume this package
// provides, and how a test gets a fresh, empty one. Every test that runs
// forEachVolume holds on every member; TestEveryVolumeIsInTheConformanceTable
// fails when a constructor of a Volume is missing here.
type volumeKind struct {
	name string
	// constructors are the package's functions that return this kind.
	constructors []string
	// open returns a fresh, empty volume and a function giving further
	// handles on the same storage, as another replica (another process,
	// another client) would open it.
	open func(t *testing.T) (v Volume, replica func() Volume)
}

// volumeKinds is the conformance table.
func volumeKinds() []volumeKind {
	return []volumeKind{
		{name: "dir", constructors: []string{"DirVolume"}, open: func(t *testing.T) (Volume, func() Volume) {
			root := t.TempDir()
			open := func() Volume {
				v := DirVolume(root)
				t.Cleanup(func() { _ = v.(interface{ Close() error }).Close() })
				return v
			}
			return open(), open
		}},
		{name: "s3", constructors: []string{"s3volume.New", "s3volume.Open"}, open: func(t *testing.T) (Volume, func() Volume) {
			srv := s3test.Start(t)
			open := func() Volume {
				v, err := s3volume.New(s3volume.Options{Client: srv.Client(), Bucket: srv.Bucket, Prefix: "registry"})
				require.NoError(t, err)
				return v
			}
			return open(), open
		}},
	}
}

// forEachVolume runs test once per member of the conformance table.
func forEachVolume(t *testing.T, test func(t *testing.T, k volumeKind)) {
	t.Helper()
	for _, k := range volumeKinds() {
		t.Run(k.name, func(t *testing.T) { test(t, k) })
	}
}

// openVolume is k.open without the replica handles.
func (k volumeKind) openVolume(t *testing.T) Volume {
	v, _ := k.open(t)
	return v
}

func TestEveryVolumeIsInTheConformanceTable(t *testing.T) {
	listed := map[string]bool{}
	for _, k := range volumeKinds() {
		for _, c := range k.constructors {
			listed[c] = true
		}
	}
	constructors := volumeConstructors(t)
	require.NotEmpty(t, constructors)
	for _, c := range constructors {
		require.True(t, listed[c], "%s returns a Volume but no member of volumeKinds() lists it: add it to the conformance table", c)
	}
	// Negative control: a table without the S3 volume misses a constructor.
	missing := slices.DeleteFunc(slices.Clone(constructors), func(c string) bool { return c == "DirVolume" })
	require.Contains(t, missing, "s3volume.New", "the scan finds the S3 volume's constructors")
}

// volumeConstructors lists the exported functions of this package and of
// every package beneath its directory (s3volume, and any volume package
// added beside it) whose first result is Volume or a type named …Volume:
// every volume the landing ships.
func volumeConstructors(t *testing.T) []string { return volumeConstructorsUnder(t, ".") }

// volumeConstructorsUnder is volumeConstructors for the package in root
// and those beneath it, each named by its directory (root's own unprefixed).
func volumeConstructorsUnder(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if p != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata" ||
			d.Name() == "volumetest") { // the table's own package: its KeepExclusive wraps a listed volume
			return filepath.SkipDir
		}
		prefix := ""
		if p != root {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			prefix = filepath.ToSlash(rel) + "."
		}
		out = append(out, constructorsIn(t, p, prefix)...)
		return nil
	})
	require.NoError(t, err)
	slices.Sort(out)
	return out
}

// A volume package added beside s3volume is scanned: its constructor is
// found, so a table without it fails TestEveryVolumeIsInTheConformanceTable.
// The scan read only this package and s3volume before, so such a volume
// ran through no conformance test and no test said so (control run: with
// that fixed list this test fails).
func TestTheConformanceScanFindsAVolumeInAPackageAddedBesideS3volume(t *testing.T) {
	root := t.TempDir()
	write := func(name, src string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(src), 0o644))
	}
	write("volume.go", "package landing\n\ntype Volume interface{}\n\nfunc DirVolume(root string) Volume { return nil }\n")
	write("s3volume/s3volume.go", "package s3volume\n\ntype Volume struct{}\n\nfunc New() (*Volume, error) { return nil, nil }\n")
	write("nfsvolume/nfs.go", "package nfsvolume\n\ntype Volume struct{}\n\nfunc Mount(addr string) (*Volume, error) { return nil, nil }\n")
	write("nfsvolume/nfs_test.go", "package nfsvolume\n\nfunc NewTestVolume() *Volume { return nil }\n")
	assert.Equal(t, []string{"DirVolume", "nfsvolume.Mount", "s3volume.New"}, volumeConstructorsUnder(t, root))
}

// A volume package that imports the landing and returns its interface
// (landing.Volume, landing.ExclusiveVolume, a pointer to either) is found
// too: the scan matched a bare type name only, so such a constructor was
// missing from the table and no test said so. Negative control, run by
// hand: without the selector case in constructorsIn, the three were not
// found.
func TestTheConformanceScanFindsAConstructorReturningTheLandingsVolumeInterface(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "gcsvolume"), 0o755))
	src := "package gcsvolume\n\nimport \"github.com/meshrx/meshrx/registry/landing\"\n\n" +
		"func New() (landing.Volume, error) { return nil, nil }\n\n" +
		"func NewExclusive() landing.ExclusiveVolume { return nil }\n\n" +
		"func NewPointer() *landing.StreamingVolume { return nil }\n\n" +
		"func Options() landing.Options { return landing.Options{} }\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "gcsvolume", "gcs.go"), []byte(src), 0o644))
	assert.Equal(t, []string{"gcsvolume.New", "gcsvolume.NewExclusive", "gcsvolume.NewPointer"}, volumeConstructorsUnder(t, root))
}

func constructorsIn(t *testing.T, dir, prefix string) []string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	var out []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil || len(fn.Type.Results.List) == 0 {
					continue
				}
				typ := fn.Type.Results.List[0].Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				if sel, ok := typ.(*ast.SelectorExpr); ok {
					typ = sel.Sel // landing.Volume, from a package importing the landing
				}
				if id, ok := typ.(*ast.Ident); ok && strings.HasSuffix(id.Name, "Volume") {
					out = append(out, prefix+fn.Name.Name)
				}
			}
		}
	}
	return out
}

// exclusiveWrapper gives a test's wrapper the CreateExclusive of the
// volume it wraps, when that volume has one: a wrapper hiding it would
// turn an object store into a volume the landing renames on.
type exclusiveWrapper struct {
	Volume
	x ExclusiveVolume
}

func (w exclusiveWrapper) CreateExclusive(ctx context.Context, name string, data []byte) error {
	return w.x.CreateExclusive(ctx, name, data)
}

func (w exclusiveWrapper) WriteFrom(ctx context.Context, name string, r io.Reader) error {
	return writeStream(ctx, w.Volume, name, r)
}

// keepExclusive returns wrapper, with inner's CreateExclusive when inner has one.
func keepExclusive(wrapper, inner Volume) Volume {
	if x, ok := inner.(ExclusiveVolume); ok {
		if _, ok := wrapper.(ExclusiveVolume); !ok {
			return exclusiveWrapper{Volume: wrapper, x: x}
		}
	}
	return wrapper
}

// counting wraps v in a testkit.CountedVolume, keeping CreateExclusive.
func counting(v Volume) (Volume, *testkit.CountedVolume) {
	cv := testkit.CountingVolume(v)
	return keepExclusive(cv, v), cv
}

// volumeTree lists every file and directory on v, read through the
// volume itself: what a landing left behind, on any kind.
func volumeTree(t *testing.T, v Volume) []string {
	t.Helper()
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := v.ReadDir(t.Context(), dir)
		if dir == "." && err != nil && errors.Is(err, fs.ErrNotExist) {
			return
		}
		require.NoError(t, err)
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			if e.IsDir() {
				out = append(out, p+"/")
				walk(p)
				continue
			}
			out = append(out, p)
		}
	}
	walk(".")
	return out
}
