package mesh

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"strings"
)

// The shrink-only grace list of unanchored query shapes. Tests fail when it
// grows or when a listed shape has no caller.
//
//go:embed unanchored-queries.allow
var embeddedAllowList string

// maxAllowListBytes bounds what ParseAllowList reads.
const maxAllowListBytes = 1 << 20

// AllowList is a set of query shapes (as DescribeShape prints them) that may
// fan out over every partition without declaring partitions:all. It is
// immutable once parsed and safe for concurrent use.
type AllowList struct {
	shapes []string
	set    map[string]bool
}

// AllowListError reports a line of an allow list that is not a shape.
type AllowListError struct {
	Line   int    // 1-based line number
	Text   string // the line as read
	Reason string
}

func (e *AllowListError) Error() string {
	return fmt.Sprintf("mesh: allow list line %d %s: %s", e.Line, quoteClipped(e.Text, 80), e.Reason)
}

// DefaultAllowList returns the allow list embedded from
// mesh/unanchored-queries.allow.
func DefaultAllowList() (*AllowList, error) {
	return ParseAllowList(strings.NewReader(embeddedAllowList))
}

// ParseAllowList reads an allow list: one shape per line, blank lines and
// lines starting with # ignored. A line that is not a shape, or a shape listed
// twice, is an *AllowListError; a nil r an *ArgumentError.
func ParseAllowList(r io.Reader) (*AllowList, error) {
	if r == nil {
		return nil, nilArg("mesh.ParseAllowList", "r")
	}
	a := &AllowList{set: map[string]bool{}}
	sc := bufio.NewScanner(io.LimitReader(r, maxAllowListBytes+1))
	line, read := 0, 0
	for sc.Scan() {
		line++
		read += len(sc.Bytes()) + 1
		if read > maxAllowListBytes {
			return nil, &AllowListError{Line: line, Reason: fmt.Sprintf("allow list is longer than %d bytes", maxAllowListBytes)}
		}
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if reason := checkShape(text); reason != "" {
			return nil, &AllowListError{Line: line, Text: sc.Text(), Reason: reason}
		}
		if a.set[text] {
			return nil, &AllowListError{Line: line, Text: sc.Text(), Reason: "shape is listed twice"}
		}
		a.set[text] = true
		a.shapes = append(a.shapes, text)
	}
	if err := sc.Err(); err != nil {
		return nil, &AllowListError{Line: line + 1, Reason: err.Error()}
	}
	return a, nil
}

// checkShape returns why text is not a shape line, or "".
func checkShape(text string) string {
	const want = "want nodeType:{type|*} path:{path|-} scope:{scope}"
	if !strings.HasPrefix(text, "nodeType:") {
		return "a shape starts with nodeType:; " + want
	}
	i := strings.LastIndex(text, " scope:")
	if i < 0 || !strings.Contains(text[:i], " path:") {
		return "a shape has nodeType:, path: and scope: parts; " + want
	}
	scope := text[i+len(" scope:"):]
	if s, ok := ParseScope(scope); !ok || s.String() != scope {
		names := scopeNames()
		return fmt.Sprintf("scope %q is not one of %s (lower case, as DescribeShape prints it)", scope, strings.Join(names[:], ", "))
	}
	return ""
}

// Allows reports whether shape is listed. A nil AllowList allows nothing.
func (a *AllowList) Allows(shape string) bool {
	return a != nil && a.set[shape]
}

// Len returns the number of listed shapes.
func (a *AllowList) Len() int {
	if a == nil {
		return 0
	}
	return len(a.shapes)
}

// Shapes returns the listed shapes in file order.
func (a *AllowList) Shapes() []string {
	if a == nil {
		return nil
	}
	return append([]string(nil), a.shapes...)
}
