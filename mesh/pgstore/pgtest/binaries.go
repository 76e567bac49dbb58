package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// InstallHint is the command that installs the PostgreSQL server programs on
// the Debian and Ubuntu images the project builds on.
const InstallHint = "apt-get install -y postgresql"

// DebianRoot is where Debian and Ubuntu keep one directory per installed
// PostgreSQL major version (/usr/lib/postgresql/16/bin, ...), off PATH.
const DebianRoot = "/usr/lib/postgresql"

// Binaries are the server programs of one PostgreSQL installation. All three
// come from the same directory, so their versions match.
type Binaries struct {
	Initdb   string
	PgCtl    string
	Postgres string
}

// Dir returns the directory the programs are in ("" for the zero value).
func (b Binaries) Dir() string {
	if b.Postgres == "" {
		return ""
	}
	return filepath.Dir(b.Postgres)
}

// NotFoundError reports that no directory holds all of initdb, pg_ctl and
// postgres.
type NotFoundError struct {
	Searched []string // directories looked in, in order
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("pgtest: PostgreSQL server programs (initdb, pg_ctl, postgres) not found on PATH or in %s/*/bin "+
		"(searched %d directories); install them with `%s`, or set MESHRX_PG_URL to a server's URL",
		DebianRoot, len(e.Searched), InstallHint)
}

// FindBinaries looks for a directory holding initdb, pg_ctl and postgres: first
// each absolute directory of path (a PATH-style list, in order), then
// root/*/bin for each root, highest version first (so 16 before 15 before 9.6).
// It is a pure function of the file system; the usual call is
// FindBinaries(os.Getenv("PATH"), DebianRoot).
func FindBinaries(path string, roots ...string) (Binaries, error) {
	var searched []string
	try := func(dir string) (Binaries, bool) {
		searched = append(searched, dir)
		b := Binaries{
			Initdb:   filepath.Join(dir, "initdb"),
			PgCtl:    filepath.Join(dir, "pg_ctl"),
			Postgres: filepath.Join(dir, "postgres"),
		}
		return b, isExecutable(b.Initdb) && isExecutable(b.PgCtl) && isExecutable(b.Postgres)
	}
	for _, dir := range filepath.SplitList(path) {
		// An empty or relative PATH entry means "the current directory": never
		// run a server program found there by accident.
		if !filepath.IsAbs(dir) {
			continue
		}
		if b, ok := try(dir); ok {
			return b, nil
		}
	}
	for _, root := range roots {
		for _, dir := range versionDirs(root) {
			if b, ok := try(filepath.Join(dir, "bin")); ok {
				return b, nil
			}
		}
	}
	return Binaries{}, &NotFoundError{Searched: searched}
}

// versionDirs returns root's subdirectories whose names are versions
// ("15", "9.6"), highest first. Unreadable roots and other names are ignored.
func versionDirs(root string) []string {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	type versioned struct {
		dir     string
		version []int
	}
	var found []versioned
	for _, e := range entries {
		v, ok := parseVersion(e.Name())
		if !ok {
			continue
		}
		found = append(found, versioned{filepath.Join(root, e.Name()), v})
	}
	slices.SortFunc(found, func(a, b versioned) int { return slices.Compare(b.version, a.version) })
	dirs := make([]string, len(found))
	for i, f := range found {
		dirs[i] = f.dir
	}
	return dirs
}

func parseVersion(name string) ([]int, bool) {
	parts := strings.Split(name, ".")
	v := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, false
		}
		v[i] = n
	}
	return v, true
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
