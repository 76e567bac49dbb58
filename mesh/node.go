package mesh

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// State is the lifecycle state of a node. The zero value is StateActive.
type State uint8

const (
	StateActive State = iota
	StateNew
	StateTransient
	StateRejected
	StateDeleted
)

func stateNames() [5]string {
	return [...]string{"active", "new", "transient", "rejected", "deleted"}
}

// String returns the lower-case name of s, as it appears in JSON and queries.
func (s State) String() string {
	if names := stateNames(); int(s) < len(names) {
		return names[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// ParseState returns the State named s (ASCII case-insensitive:
// EqualNames); any other s is an *ArgumentError.
func ParseState(s string) (State, error) { return parseState("mesh.ParseState", "s", s) }

// parseState is ParseState for the function fn, whose argument arg held s.
func parseState(fn, arg, s string) (State, error) {
	names := stateNames()
	for i, name := range names {
		if EqualNames(s, name) {
			return State(i), nil
		}
	}
	return 0, &ArgumentError{Func: fn, Arg: arg,
		Reason: fmt.Sprintf("names an unknown node state %q; want one of %s", s, strings.Join(names[:], ", "))}
}

// MarshalText encodes s as its name; it fails for a value with no name.
func (s State) MarshalText() ([]byte, error) {
	if int(s) >= len(stateNames()) {
		return nil, fmt.Errorf("mesh: cannot encode unknown node %s", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText decodes a state name (case-insensitive). A nil s, or b
// that is no state name (nil or empty included), is an *ArgumentError.
func (s *State) UnmarshalText(b []byte) error {
	const fn = "mesh.(*State).UnmarshalText"
	if s == nil {
		return nilArg(fn, "receiver")
	}
	v, err := parseState(fn, "b", string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Node is one entry of the mesh. Path = Namespace + "/" + ID, or ID at the root.
type Node struct {
	ID           string          `json:"id"`
	Namespace    string          `json:"namespace"`
	Path         string          `json:"path"`
	NodeType     string          `json:"nodeType"`
	Name         string          `json:"name"`
	MainNode     string          `json:"mainNode"` // owner path for satellites; Path otherwise
	Content      json.RawMessage `json:"content,omitempty"`
	Version      int64           `json:"version"`
	State        State           `json:"state"`
	LastModified time.Time       `json:"lastModified,omitzero"`
}

// NodeError reports a node whose fields are inconsistent or invalid.
type NodeError struct {
	Path   string // the node's path, or its id when it has no path
	Field  string // the JSON name of the offending field
	Reason string
	Err    error // underlying cause, such as a *PathError; may be nil
}

func (e *NodeError) Error() string {
	msg := fmt.Sprintf("mesh: node %s: %s: %s", quoteClipped(e.Path, 64), e.Field, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *NodeError) Unwrap() error { return e.Err }

// Normalize returns n with Path filled from Namespace and ID (or Namespace and
// ID from Path), MainNode defaulted to the owner of a satellite or to Path, and
// every field validated. It returns a *NodeError (wrapping a *PathError for a
// bad path) and leaves n untouched.
func (n Node) Normalize() (Node, error) {
	name := n.Path
	if name == "" {
		name = JoinPath(n.Namespace, n.ID)
	}
	fail := func(field, reason string, err error) (Node, error) {
		return Node{}, &NodeError{Path: name, Field: field, Reason: reason, Err: err}
	}
	if n.Path == "" {
		if n.ID == "" {
			return fail("id", "a node needs an id or a path", nil)
		}
		if strings.Contains(n.ID, "/") {
			return fail("id", "an id is one path segment; put the rest in namespace", nil)
		}
		n.Path = JoinPath(n.Namespace, n.ID)
	}
	if err := ValidatePath(n.Path); err != nil {
		return fail("path", "invalid path", err)
	}
	ns, id := SplitPath(n.Path)
	if n.ID != "" && n.ID != id {
		return fail("id", fmt.Sprintf("id %q does not match path (want %q)", n.ID, id), nil)
	}
	if n.Namespace != "" && n.Namespace != ns {
		return fail("namespace", fmt.Sprintf("namespace %q does not match path (want %q)", n.Namespace, ns), nil)
	}
	n.ID, n.Namespace = id, ns
	if n.MainNode == "" {
		n.MainNode = OwnerOf(n.Path)
		if n.MainNode == "" {
			n.MainNode = n.Path
		}
	} else if err := ValidatePath(n.MainNode); err != nil {
		return fail("mainNode", "invalid main node path", err)
	}
	if len(n.Content) > 0 && !json.Valid(n.Content) {
		return fail("content", "content is not valid JSON", nil)
	}
	if n.Version < 0 {
		return fail("version", fmt.Sprintf("version %d is negative", n.Version), nil)
	}
	if int(n.State) >= len(stateNames()) {
		return fail("state", fmt.Sprintf("unknown %s", n.State), nil)
	}
	return n, nil
}

// NormalizeWrite is Normalize with the rules every store's write adds: a
// node needs a NodeType. Queries select by it and live queries are re-run
// by it, so a node without one could be written and never read by type; a
// store refuses it with a *NodeError (Field "nodeType") and writes nothing.
// And what one store cannot hold none takes: name, node type and main node
// are UTF-8 without NUL, the node type at most MaxNodeTypeLen bytes, and
// content holds no U+0000 in a string or key and no number beyond
// PostgreSQL numeric's digits (131072 before the point, 16383 after).
func (n Node) NormalizeWrite() (Node, error) {
	n, err := n.Normalize()
	if err != nil {
		return Node{}, err
	}
	if strings.TrimSpace(n.NodeType) == "" {
		return Node{}, &NodeError{Path: n.Path, Field: "nodeType",
			Reason: `a node needs a node type (set Node.NodeType, e.g. "Article"): queries select by it`}
	}
	// What PostgreSQL cannot hold no store takes: a node the embedded
	// store accepts is one every store accepts.
	for _, f := range [...]struct{ field, v string }{{"name", n.Name}, {"nodeType", n.NodeType}, {"mainNode", n.MainNode}} {
		if !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0) {
			return Node{}, &NodeError{Path: n.Path, Field: f.field, Reason: "must be UTF-8 text without NUL characters"}
		}
	}
	if len(n.NodeType) > MaxNodeTypeLen {
		return Node{}, &NodeError{Path: n.Path, Field: "nodeType",
			Reason: fmt.Sprintf("node type is %d bytes; the limit is %d", len(n.NodeType), MaxNodeTypeLen)}
	}
	if bytes.Contains(n.Content, []byte(`\u0000`)) && holdsNUL(n.Content) {
		return Node{}, &NodeError{Path: n.Path, Field: "content", Reason: `a JSON string or key holds U+0000 ("\u0000")`}
	}
	if lit, ok := numbersFit(n.Content); !ok {
		return Node{}, &NodeError{Path: n.Path, Field: "content", Reason: fmt.Sprintf(
			"the number %s has more than %d digits before the decimal point or %d after", quoteClipped(lit, 40), maxNumberInt, maxNumberFrac)}
	}
	return n, nil
}

// The digits a JSON number may have, before and after its decimal point:
// PostgreSQL's numeric, which holds content's numbers, holds no more.
const (
	maxNumberInt  = 131072
	maxNumberFrac = 16383
)

// numbersFit returns the first number of the valid JSON document content
// that does not fit maxNumberInt and maxNumberFrac, and false; true when
// every one does.
func numbersFit(content json.RawMessage) (string, bool) {
	for i := 0; i < len(content); i++ {
		switch c := content[i]; {
		case c == '"':
			for i++; i < len(content) && content[i] != '"'; i++ {
				if content[i] == '\\' {
					i++
				}
			}
		case c == '-' || ('0' <= c && c <= '9'):
			j := i
			for j < len(content) && strings.IndexByte("+-.eE0123456789", content[j]) >= 0 {
				j++
			}
			if lit := string(content[i:j]); !numberFits(lit) {
				return lit, false
			}
			i = j - 1
		}
	}
	return "", true
}

// numberFits reports whether the valid JSON number lit fits: its digits
// from the first significant one to the decimal point, and its scale
// (the digits written after the point, less the exponent), as PostgreSQL
// counts them.
func numberFits(lit string) bool {
	mant, exp := strings.TrimPrefix(lit, "-"), 0
	if i := strings.IndexAny(mant, "eE"); i >= 0 {
		e, err := strconv.Atoi(mant[i+1:])
		if err != nil || e >= 1<<30-1 || e <= -(1<<30-1) {
			return false
		}
		mant, exp = mant[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if len(frac)-exp > maxNumberFrac {
		return false
	}
	all := intPart + frac
	significant := strings.TrimLeft(all, "0")
	if significant == "" {
		return true // zero
	}
	return len(intPart)+exp-(len(all)-len(significant)) <= maxNumberInt
}

// MaxNodeTypeLen bounds a written node's type, in bytes.
const MaxNodeTypeLen = 256

// holdsNUL reports whether a string or key of the valid JSON document
// content decodes to text holding U+0000.
func holdsNUL(content json.RawMessage) bool {
	dec := json.NewDecoder(bytes.NewReader(content))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && strings.ContainsRune(s, 0) {
			return true
		}
	}
}
