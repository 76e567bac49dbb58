package mesh

import (
	"fmt"
	"strings"
)

// The name rule. Names — partitions, node types, module and package names,
// versions, grant entries — are compared with ASCII case folding and
// nothing else: 'A'–'Z' equal 'a'–'z', every other byte equals only itself.
// Unicode case folding is never used to compare names, because it makes
// distinct spellings equal in surprising ways (U+212A KELVIN SIGN folds to
// 'k', U+017F LATIN SMALL LETTER LONG S to 's'), so a name that looks unlike
// another would reach its data. Partition names, which become storage
// schemas, must be ASCII (ValidatePath refuses others).

// EqualNames reports whether a and b are the same name under ASCII case
// folding.
func EqualNames(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

// FoldName returns name with 'A'–'Z' lowered and every other byte as it
// is: the key under which EqualNames names are equal. It does not allocate
// for a name with no upper-case ASCII letter.
func FoldName(name string) string {
	for i := 0; i < len(name); i++ {
		if 'A' <= name[i] && name[i] <= 'Z' {
			b := []byte(name)
			for j := i; j < len(b); j++ {
				b[j] = lowerASCII(b[j])
			}
			return string(b)
		}
	}
	return name
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// MaxPartitionNameLen is the longest partition name, in bytes: PostgreSQL's
// identifier limit, past which a schema name is truncated and could name
// another partition's schema.
const MaxPartitionNameLen = 63

// PartitionNameProblem says why name, a path's first segment that is not a
// global satellite, cannot name a partition in every store, or "" when it
// can. A partition is a schema in PostgreSQL, which reserves the names
// starting with pg_, public and information_schema, and truncates names
// past MaxPartitionNameLen bytes.
func PartitionNameProblem(name string) string {
	schema := FoldName(name)
	switch {
	case len(schema) > MaxPartitionNameLen:
		return fmt.Sprintf("the lower-cased name is %d bytes; schema names are limited to %d", len(schema), MaxPartitionNameLen)
	case strings.HasPrefix(schema, "pg_"):
		return "names starting with pg_ are reserved by PostgreSQL"
	case schema == "public" || schema == "information_schema":
		return "the name belongs to a schema that is not a partition"
	}
	return ""
}
