package leakrule_test

import (
	"go/ast"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// verifiers are the calls that count as a leak check in a TestMain, by
// import path and function: goleak's own, and pgtest.Main, which runs it
// around the package's throwaway PostgreSQL server.
var verifiers = map[string]string{
	"go.uber.org/goleak":                           "VerifyTestMain",
	"github.com/meshrx/meshrx/mesh/pgstore/pgtest": "Main",
}

// unverified returns the package directories under root (relative,
// slash-separated; "." for root itself) that hold Go files but no TestMain
// calling a verifier. Hidden directories, testdata, vendor and other
// modules are left out.
func unverified(t *testing.T, root string) []string {
	t.Helper()
	verified := map[string]bool{}
	testkit.ModuleTestFiles(t, root, nil, func(file string, f *ast.File) {
		if testMainVerifies(f) {
			verified[path.Dir(file)] = true
		}
	})
	var missing []string
	for _, dir := range testkit.ModulePackageDirs(t, root, nil) {
		if !verified[dir] {
			missing = append(missing, dir)
		}
	}
	slices.Sort(missing)
	return missing
}

// testMainVerifies reports whether f declares TestMain and its body calls
// a verifier, resolved through f's imports.
func testMainVerifies(f *ast.File) bool {
	names := map[string]string{} // local name -> the verifier's function
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		fn, ok := verifiers[p]
		if !ok {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = fn
	}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || fd.Name.Name != "TestMain" || fd.Body == nil {
			continue
		}
		found := false
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && names[x.Name] == sel.Sel.Name {
				found = true
			}
			return !found
		})
		return found
	}
	return false
}

func TestEveryPackageOfTheModuleVerifiesItsTestsLeaveNoGoroutine(t *testing.T) {
	assert.Empty(t, unverified(t, testkit.ModuleRoot(t)), "packages whose tests never run goleak.VerifyTestMain (give each a TestMain that does)")
}

// TestTheLeakRuleFindsAPackageWithoutAVerifyingTestMain is the rule's
// negative control: in a module made for it, a package without TestMain,
// one whose TestMain runs the tests without goleak, one that names goleak
// only outside TestMain and one whose goleak import is renamed away from
// its call are found; packages verifying directly, through a renamed
// import and through pgtest.Main are not.
func TestTheLeakRuleFindsAPackageWithoutAVerifyingTestMain(t *testing.T) {
	root := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		path := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	}
	write("go.mod", "module example.test\n")
	write("a.go", "package a\n")
	write("main_test.go", "package a\nimport (\"testing\"; \"go.uber.org/goleak\")\nfunc TestMain(m *testing.M) { goleak.VerifyTestMain(m) }\n")
	write("renamed/r.go", "package r\n")
	write("renamed/main_test.go", "package r_test\nimport (\"testing\"; leak \"go.uber.org/goleak\")\nfunc TestMain(m *testing.M) { leak.VerifyTestMain(m) }\n")
	write("pg/p.go", "package p\n")
	write("pg/main_test.go", "package p\nimport (\"testing\"; \"github.com/meshrx/meshrx/mesh/pgstore/pgtest\")\nvar h pgtest.Harness\nfunc TestMain(m *testing.M) { pgtest.Main(m, &h) }\n")
	write("none/n.go", "package n\n")
	write("none/n_test.go", "package n\nimport \"testing\"\nfunc TestN(t *testing.T) {}\n")
	write("plain/p.go", "package plain\n")
	write("plain/main_test.go", "package plain\nimport (\"os\"; \"testing\")\nfunc TestMain(m *testing.M) { os.Exit(m.Run()) }\n")
	write("outside/o.go", "package outside\n")
	write("outside/main_test.go", "package outside\nimport (\"testing\"; \"go.uber.org/goleak\")\nfunc TestMain(m *testing.M) { m.Run() }\nfunc TestX(t *testing.T) { goleak.VerifyNone(t); _ = goleak.VerifyTestMain }\n")
	write("shadow/s.go", "package shadow\n")
	write("shadow/main_test.go", "package shadow\nimport (\"testing\"; g \"go.uber.org/goleak\")\nvar goleak struct{ VerifyTestMain func(*testing.M) }\nfunc TestMain(m *testing.M) { goleak.VerifyTestMain(m); _ = g.VerifyNone }\n")
	write("untested/u.go", "package untested\n")
	write("testdata/skipped.go", "package skipped\n")
	write(".hidden/h.go", "package hidden\n")
	write("nested/go.mod", "module example.test/nested\n")
	write("nested/x.go", "package x\n")
	assert.Equal(t, []string{"none", "outside", "plain", "shadow", "untested"}, unverified(t, root))
}
