package testkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// PackageFiles parses the non-test Go files of the package in dir: what a
// test that checks a rule over a package's declarations reads.
func PackageFiles(t testing.TB, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// ModuleRoot returns the directory holding go.mod, at or above the test's
// working directory.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod at or above the working directory")
		}
		dir = parent
	}
}

// ModuleFiles parses every non-test Go file of the module rooted at root
// (another module below it, hidden directories, testdata and vendor are
// left out, and any directory skip names: its path relative to root,
// slash-separated) and calls visit with each, named relative to root.
func ModuleFiles(t testing.TB, root string, skip func(dir string) bool, visit func(file string, f *ast.File)) {
	t.Helper()
	parseModule(t, root, skip, false, visit)
}

// ModuleTestFiles is ModuleFiles for the module's _test.go files.
func ModuleTestFiles(t testing.TB, root string, skip func(dir string) bool, visit func(file string, f *ast.File)) {
	t.Helper()
	parseModule(t, root, skip, true, visit)
}

// ModulePackageDirs returns the directories of the module rooted at root
// that hold Go files (relative to root, slash-separated, "." for root),
// leaving out what ModuleFiles does.
func ModulePackageDirs(t testing.TB, root string, skip func(dir string) bool) []string {
	t.Helper()
	seen := map[string]bool{}
	var dirs []string
	walkModule(t, root, skip, func(rel, _ string) error {
		if dir := path.Dir(rel); !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
		return nil
	})
	return dirs
}

func parseModule(t testing.TB, root string, skip func(dir string) bool, tests bool, visit func(file string, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	walkModule(t, root, skip, func(rel, full string) error {
		if strings.HasSuffix(rel, "_test.go") != tests {
			return nil
		}
		f, err := parser.ParseFile(fset, full, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		visit(rel, f)
		return nil
	})
}

// walkModule calls visit with every Go file of the module rooted at root,
// by its path relative to root and its full path.
func walkModule(t testing.TB, root string, skip func(dir string) bool, visit func(rel, full string) error) {
	t.Helper()
	err := filepath.WalkDir(root, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, full)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if full == root {
				return nil
			}
			if name := d.Name(); strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || (skip != nil && skip(rel)) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(full, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(full, ".go") {
			return nil
		}
		return visit(rel, full)
	})
	if err != nil {
		t.Fatal(err)
	}
}
