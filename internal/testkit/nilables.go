package testkit

import (
	"go/ast"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// NilableFunc is an exported function or method and its parameters that
// can be nil ("receiver" for a receiver that can).
type NilableFunc struct {
	Name   string // "FanIn", "(*Router).Route", "And.String"
	Params []string
}

// NilableParams reads the exported functions and methods (of exported
// types) declared in the non-test files of the package in dir, as
// rx/conformance_nilsource_test.go reads package rx's, and returns those
// with a parameter or receiver that can be nil: a pointer, slice, map,
// func, channel or interface, or a type of the package that is one. foreign
// says whether a type of another package ("context.Context") can be nil;
// a type it does not list fails t, to be added. A test of nil arguments
// checks its table against it.
func NilableParams(t testing.TB, dir string, foreign map[string]bool) []NilableFunc {
	t.Helper()
	files := PackageFiles(t, dir)
	// The package's own types: which can be nil.
	local := map[string]ast.Expr{}
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, s := range g.Specs {
					ts := s.(*ast.TypeSpec)
					local[ts.Name.Name] = ts.Type
				}
			}
		}
	}
	var nilable func(e ast.Expr) bool
	nilable = func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.StarExpr, *ast.MapType, *ast.FuncType, *ast.ChanType, *ast.InterfaceType, *ast.Ellipsis:
			return true
		case *ast.ArrayType:
			return x.Len == nil
		case *ast.IndexExpr:
			return nilable(x.X)
		case *ast.Ident:
			if x.Name == "error" || x.Name == "any" {
				return true
			}
			if under, ok := local[x.Name]; ok {
				if _, isStruct := under.(*ast.StructType); isStruct {
					return false
				}
				return nilable(under)
			}
			return false // a predeclared type
		case *ast.SelectorExpr:
			name := x.X.(*ast.Ident).Name + "." + x.Sel.Name
			can, known := foreign[name]
			if !known {
				t.Errorf("type %s in a signature: say in foreign whether it can be nil", name)
			}
			return can
		}
		t.Errorf("unclassified type %T in a signature", e)
		return false
	}
	var out []NilableFunc
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			nf := NilableFunc{Name: fd.Name.Name}
			if fd.Recv != nil {
				rt := fd.Recv.List[0].Type
				recv := rt
				if st, ok := rt.(*ast.StarExpr); ok {
					recv = st.X
				}
				id := recv.(*ast.Ident)
				if !id.IsExported() {
					continue
				}
				if _, ptr := rt.(*ast.StarExpr); ptr {
					nf.Name = "(*" + id.Name + ")." + nf.Name
				} else {
					nf.Name = id.Name + "." + nf.Name
				}
				if nilable(rt) {
					nf.Params = append(nf.Params, "receiver")
				}
			}
			for _, p := range fd.Type.Params.List {
				if nilable(p.Type) {
					for _, n := range p.Names {
						nf.Params = append(nf.Params, n.Name)
					}
				}
			}
			if len(nf.Params) > 0 {
				out = append(out, nf)
			}
		}
	}
	slices.SortFunc(out, func(a, b NilableFunc) int { return strings.Compare(a.Name, b.Name) })
	if len(files) == 0 {
		t.Errorf("no Go files in %s", dir)
	}
	return out
}

// CheckNilableRows fails t for each nilable parameter of funcs that covered
// (keyed "Name param", as NilableFunc names them) has no row for, unless
// excluded (may be nil) says it needs none, and for each row of covered
// that names no such parameter: the completeness check of a table of nil
// arguments. It empties covered.
func CheckNilableRows(t testing.TB, funcs []NilableFunc, covered map[string]bool, excluded func(fn, param string) bool) {
	t.Helper()
	var missing []string
	for _, fn := range funcs {
		for _, param := range fn.Params {
			key := fn.Name + " " + param
			if !covered[key] && (excluded == nil || !excluded(fn.Name, param)) {
				missing = append(missing, key)
			}
			delete(covered, key)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("exported functions with a nilable parameter without a row: %v", missing)
	}
	if len(covered) > 0 {
		t.Errorf("rows for no declared (function, nilable parameter): %v", covered)
	}
}

// Recovered runs f and returns what it panicked with (nil when it did not).
func Recovered(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}
