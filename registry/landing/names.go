package landing

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Length limits for the names that become directory names on the volume.
const (
	maxModuleNameLen = 128
	maxVersionLen    = 64
)

// NameError reports a module name or version that cannot be used. Nothing is
// written for a request that carries one.
type NameError struct {
	Field  string // "module" or "version"
	Value  string // the refused value, as given
	Reason string // what is wrong with it
}

func (e *NameError) Error() string {
	return fmt.Sprintf("registry: invalid %s name %q: %s", e.Field, e.Value, e.Reason)
}

// ValidateModuleName reports whether name can name a module: 1 to 128 bytes
// of ASCII letters, digits, '.', '_' and '-', starting with a letter or digit.
// Module names are compared without regard to case, because a shared volume
// may not tell "Foo" from "foo".
func ValidateModuleName(name string) error {
	if reason := checkName(name, maxModuleNameLen, "._-"); reason != "" {
		return &NameError{Field: "module", Value: name, Reason: reason}
	}
	return nil
}

// ValidateVersion reports whether version can name a module version: 1 to 64
// bytes of ASCII letters, digits, '.', '_', '-' and '+', starting with a
// letter or digit.
func ValidateVersion(version string) error {
	if reason := checkName(version, maxVersionLen, "._-+"); reason != "" {
		return &NameError{Field: "version", Value: version, Reason: reason}
	}
	return nil
}

// checkName returns why s cannot be used as a single directory name, or "".
// The order of checks puts the most telling reason first.
func checkName(s string, maxLen int, punct string) string {
	switch {
	case s == "":
		return "empty"
	case len(s) > maxLen:
		return fmt.Sprintf("longer than %d bytes", maxLen)
	case strings.HasPrefix(s, "/") || strings.HasPrefix(s, `\`) || hasDriveLetter(s):
		return "is an absolute path"
	case strings.Contains(s, ".."):
		return "contains '..'"
	case strings.ContainsAny(s, `/\`):
		return "contains a path separator"
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			return "is not valid UTF-8"
		case r < 0x20 || r == 0x7f:
			return fmt.Sprintf("contains control character %U at byte %d", r, i)
		case isASCIIAlnum(r):
		case r < utf8.RuneSelf && strings.ContainsRune(punct, r):
			if i == 0 {
				return "must start with a letter or digit"
			}
		default:
			return fmt.Sprintf("contains %q at byte %d; allowed are letters, digits and %q", r, i, punct)
		}
	}
	if reason := checkPortableSegment(s); reason != "" {
		return reason
	}
	return ""
}

// checkPortableSegment returns why seg would be unsafe as one path segment on
// a volume that may be a Windows (SMB) share, or shown to a person, or "".
// It assumes seg holds no separators. It refuses control characters (C0 and
// C1, such as U+0085 NEXT LINE) and invisible formatting characters
// (Unicode category Cf: bidi overrides such as U+202E, which make a name
// read as another, zero-width characters, byte order marks), and Windows
// device names however they are suffixed (CON, CONIN$, COM1, COM¹, ...).
func checkPortableSegment(seg string) string {
	if strings.HasSuffix(seg, ".") || strings.HasSuffix(seg, " ") {
		return "ends with '.' or a space"
	}
	if i := strings.IndexAny(seg, `<>:"|?*`); i >= 0 {
		return fmt.Sprintf("contains %q", seg[i])
	}
	for i, r := range seg {
		switch {
		case r == utf8.RuneError:
			return fmt.Sprintf("is not valid UTF-8 at byte %d", i)
		case unicode.IsControl(r):
			return fmt.Sprintf("contains control character %U at byte %d", r, i)
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("contains invisible formatting character %U at byte %d (such as a bidi override)", r, i)
		}
	}
	// Windows takes the part before the first dot, trailing spaces
	// ignored, as the device: "CON .txt" and "nul.tar.gz" are devices.
	base, _, _ := strings.Cut(seg, ".")
	base = strings.TrimRight(base, " ")
	if isReservedDeviceName(base) {
		return fmt.Sprintf("%q is a reserved device name on Windows", base)
	}
	return ""
}

// isReservedDeviceName reports whether s names a Windows device, compared
// with ASCII case folding: CON, PRN, AUX, NUL, CONIN$, CONOUT$, and COM or
// LPT followed by one digit 0-9 or a superscript digit ¹ ² ³ (which
// Windows treats as devices too).
func isReservedDeviceName(s string) bool {
	u := strings.ToUpper(s) // Unicode upper-casing refuses more spellings (ı, ſ), never fewer: the safe side
	switch u {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if len(u) < 4 || !(strings.HasPrefix(u, "COM") || strings.HasPrefix(u, "LPT")) {
		return false
	}
	switch u[3:] {
	case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "\u00b9", "\u00b2", "\u00b3":
		return true
	}
	return false
}

func hasDriveLetter(s string) bool {
	return len(s) >= 2 && s[1] == ':' && (s[0]|0x20) >= 'a' && (s[0]|0x20) <= 'z'
}

func isASCIIAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// moduleKey is the directory name of a module: its name folded to lower case,
// so that case-insensitive and case-sensitive volumes agree on identity.
func moduleKey(module string) string { return foldName(module) }

// CompareNames orders two module names as their keys (their lower-case
// forms) order, without allocating: the order of Activation.Modules. A
// module name is ASCII (ValidateModuleName), and so is a key.
func CompareNames(a, b string) int {
	if a == b {
		return 0
	}
	for k := 0; k < len(a) && k < len(b); k++ {
		x, y := lowerASCII(a[k]), lowerASCII(b[k])
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// NameProblem returns why s cannot be used as a plain name of at most
// maxLen ASCII letters, digits and the characters of punct (a module name, a
// plan tier), or "" when it can.
func NameProblem(s string, maxLen int, punct string) string { return checkName(s, maxLen, punct) }

// foldName folds 'A'–'Z' to lower case and leaves every other byte: the
// name rule of mesh.FoldName (ASCII case folding only), which module keys,
// version claims and version comparisons all use.
func foldName(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = lowerASCII(b[j])
			}
			return string(b)
		}
	}
	return s
}

// FoldName is foldName for the packages that compare module names as the
// landing does (registry/client): the key under which CompareNames reports
// names equal.
func FoldName(s string) string { return foldName(s) }

// equalNames compares two names with the name rule (ASCII case folding).
func equalNames(a, b string) bool { return len(a) == len(b) && foldName(a) == foldName(b) }
