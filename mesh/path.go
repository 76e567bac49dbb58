package mesh

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on node paths. They keep a path usable as an index key and in a URL.
const (
	MaxPathLen    = 1024 // bytes in a whole path
	MaxSegmentLen = 255  // bytes in one segment
	MaxPathDepth  = 64   // segments in a path
)

// NodesTable is the table that holds every node that is not in a satellite.
const NodesTable = "mesh_nodes"

// PathError reports a path that cannot name a node.
type PathError struct {
	Path   string // the path as given
	Reason string // what is wrong with it
}

func (e *PathError) Error() string {
	return fmt.Sprintf("mesh: invalid path %s: %s", quoteClipped(e.Path, 64), e.Reason)
}

// JoinPath returns the path of the node id in namespace ns; at the root (ns
// empty) that is id itself.
func JoinPath(ns, id string) string {
	if ns == "" {
		return id
	}
	return ns + "/" + id
}

// SplitPath splits path at its last slash into namespace and id. A
// single-segment path has an empty namespace.
func SplitPath(path string) (ns, id string) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "", path
	}
	return path[:i], path[i+1:]
}

// Partition returns the first segment of path: the partition the node lives in.
func Partition(path string) string {
	if i := strings.IndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return path
}

// SchemaOf returns the storage schema of the partition path lives in: its
// first segment folded with the name rule (FoldName: ASCII case only).
func SchemaOf(path string) string {
	return FoldName(Partition(path))
}

// ValidatePath reports whether path can name a node. It returns a *PathError
// naming the first problem found.
func ValidatePath(path string) error {
	bad := func(format string, args ...any) error {
		return &PathError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case path == "":
		return bad("path is empty")
	case len(path) > MaxPathLen:
		return bad("path is %d bytes; the limit is %d", len(path), MaxPathLen)
	case !utf8.ValidString(path):
		return bad("path is not valid UTF-8")
	case path[0] == '/':
		return bad("path starts with a slash; paths are relative to the root")
	case path[len(path)-1] == '/':
		return bad("path ends with a slash")
	}
	depth, start := 0, 0
	for seg := range strings.SplitSeq(path, "/") {
		depth++
		switch {
		case seg == "":
			return bad("empty segment at byte %d", start)
		case seg == "." || seg == "..":
			return bad("segment %q at byte %d is not allowed", seg, start)
		case len(seg) > MaxSegmentLen:
			return bad("segment at byte %d is %d bytes; the limit is %d", start, len(seg), MaxSegmentLen)
		}
		for i, r := range seg {
			switch {
			case unicode.IsControl(r):
				return bad("control character %U at byte %d", r, start+i)
			case depth == 1 && r >= utf8.RuneSelf:
				// A partition is a storage schema and an identity (a user's
				// bell, a tenant): its name is ASCII, compared with ASCII
				// case folding, so no other letter (U+212A KELVIN SIGN for
				// 'K') can spell another partition's name.
				return bad("partition name has %U at byte %d; partition names are ASCII", r, start+i)
			}
		}
		start += len(seg) + 1
	}
	if depth > MaxPathDepth {
		return bad("path has %d segments; the limit is %d", depth, MaxPathDepth)
	}
	return nil
}

// satelliteTable maps a satellite container segment to its table.
func satelliteTable(segment string) (table string, ok bool) {
	if !strings.HasPrefix(segment, "_") {
		return "", false
	}
	switch FoldName(segment) {
	case "_access":
		return "access", true
	case "_notification":
		return "notifications", true
	case "_thread", "_threadmessage":
		return "threads", true
	case "_activity":
		return "activities", true
	}
	return "", false
}

// SatelliteTables lists the tables that hold satellite nodes, in name order.
func SatelliteTables() []string {
	return []string{"access", "activities", "notifications", "threads"}
}

// firstSatellite returns the byte offset of the first satellite segment of
// path, or -1.
func firstSatellite(path string) int {
	start := 0
	for seg := range strings.SplitSeq(path, "/") {
		if _, ok := satelliteTable(seg); ok {
			return start
		}
		start += len(seg) + 1
	}
	return -1
}

// TableFor returns the table the node at path is stored in: the table of its
// first satellite segment (so {owner}/_Access/{id} is in "access"), or
// NodesTable when it has none. _Policy is not a satellite.
func TableFor(path string) string {
	i := firstSatellite(path)
	if i < 0 {
		return NodesTable
	}
	seg, _, _ := strings.Cut(path[i:], "/")
	table, _ := satelliteTable(seg)
	return table
}

// OwnerOf returns the path of the node that owns path: the part before its
// first satellite segment. A path with no satellite segment owns itself; a
// global satellite (such as _Access/x) is owned by the root, "".
func OwnerOf(path string) string {
	i := firstSatellite(path)
	switch {
	case i < 0:
		return path
	case i == 0:
		return ""
	}
	return path[:i-1]
}

// DefaultGlobalSatellites returns the registry of global satellites: the
// first segments starting with "_" that route to a schema of their own.
func DefaultGlobalSatellites() map[string]string {
	return map[string]string{"_Access": "system_access"}
}

// quoteClipped quotes s for an error message, shortening it to about n bytes
// so a huge input does not flood a log.
func quoteClipped(s string, n int) string {
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q…", s[:cut])
}

// UnroutablePathError reports a write to a path no partition schema can
// hold: its first segment starts with _ but is not a registered global
// satellite. Every store refuses such a write with it.
type UnroutablePathError struct {
	Path    string // the path written
	Segment string // its first segment
}

func (e *UnroutablePathError) Error() string {
	return fmt.Sprintf("mesh: cannot store %q: first segment %q starts with _ but is not a registered global satellite, "+
		"so no partition schema holds it; use a partition as the first segment, or register %s in the router's GlobalSatellites",
		e.Path, e.Segment, e.Segment)
}
