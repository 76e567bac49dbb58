package volumetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/registry/landing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every exported function of package landing whose first result is a
// Volume (or a type named …Volume) is listed by a kind. Negative control:
// the scan finds the S3 constructors, so a table without the s3 kind fails.
func TestEveryVolumeConstructorIsAKind(t *testing.T) {
	listed := map[string]bool{}
	for _, k := range Kinds() {
		for _, c := range k.Constructors {
			listed[c] = true
		}
	}
	// The landing's package and every package beneath it: a volume
	// package added beside s3volume is scanned too.
	var found []string
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if p != ".." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata" ||
			d.Name() == "volumetest") { // the table's own package: its KeepExclusive wraps a listed volume
			return filepath.SkipDir
		}
		prefix := ""
		if p != ".." {
			rel, err := filepath.Rel("..", p)
			if err != nil {
				return err
			}
			prefix = filepath.ToSlash(rel) + "."
		}
		found = append(found, constructorsIn(t, p, prefix)...)
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, found, "s3volume.New", "control: the scan finds the S3 volume")
	for _, c := range found {
		require.True(t, listed[c], "%s returns a Volume but no kind lists it", c)
	}
}

func constructorsIn(t *testing.T, dir, prefix string) []string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	var found []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil {
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
					found = append(found, prefix+fn.Name.Name)
				}
			}
		}
	}
	return found
}

// Every kind opens an empty volume whose replica handles see one storage,
// and KeepExclusive keeps an S3 volume exclusive through a wrapper.
func TestEachKindOpensOneStorageForEveryReplicaHandle(t *testing.T) {
	ForEach(t, func(t *testing.T, k Kind) {
		v, replica := k.Open(t)
		require.NoError(t, v.MkdirAll(t.Context(), "x"))
		require.NoError(t, v.WriteFile(t.Context(), "x/y", []byte("1")))
		got, err := replica().ReadFile(t.Context(), "x/y", 1)
		require.NoError(t, err)
		require.Equal(t, []byte("1"), got)
		_, inner := v.(landing.ExclusiveVolume)
		_, kept := KeepExclusive(struct{ landing.Volume }{v}, v).(landing.ExclusiveVolume)
		require.Equal(t, inner, kept)
		require.Equal(t, k.Name == "s3", kept)
	})
}
