package mesh

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
