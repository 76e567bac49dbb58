package sqlgen

import (
	"strings"
	"unicode/utf8"

	"github.com/meshrx/meshrx/mesh"
)

// Folded keys. Every node table has, beside each text field mesh matches
// case-insensitively, a column holding the field folded with Fold (mesh's
// own folding), collated "C" and indexed by a B-tree. An equality, an
// in-list or a glob with a literal prefix then becomes an equality, = ANY
// or a byte range on the key, which the index serves; a regular expression
// remains only for what a glob holds after its prefix.
//
// Keys are NULL on a row written before the columns existed (or by a
// writer that does not fill them) until the backfill reaches it; a CHECK
// constraint keeps a row's six keys all NULL or all set. A statement with
// keyed conditions therefore reads each table in two branches:
//
//	... WHERE n.path_key IS NOT NULL AND <conditions on the keys>
//	UNION ALL
//	... WHERE n.path_key IS NULL AND <the spelled-out patterns>
//
// each exact for its rows. The first is planned as a plain index scan; once
// the keys are filled the second is an index probe that finds nothing. (An
// OR of both forms in one WHERE is exact too, but plans as bitmap scans
// and costs more to plan than the read takes.)

// KeyColumns are the folded key columns, in the order Keys.Values returns
// their values.
const KeyColumns = "ns_key, id_key, path_key, name_key, type_key, main_key"

// Fold is the folding mesh matches text with (strings.ToLower, rune by
// rune). Keys are computed with it in Go, never with the server's lower(),
// whose result follows the server's locale.
func Fold(s string) string { return strings.ToLower(s) }

// Keys are the folded keys of one node.
type Keys struct {
	Namespace, ID, Path, Name, NodeType, MainNode string
}

// KeysOf returns the keys of the node with these stored fields. A node
// without a main node is its own main node, as mesh reads it.
func KeysOf(namespace, id, name, nodeType, mainNode string) Keys {
	path := mesh.JoinPath(namespace, id)
	if mainNode == "" {
		mainNode = path
	}
	return Keys{
		Namespace: Fold(namespace), ID: Fold(id), Path: Fold(path),
		Name: Fold(name), NodeType: Fold(nodeType), MainNode: Fold(mainNode),
	}
}

// Values returns the keys in KeyColumns order.
func (k Keys) Values() []any {
	return []any{k.Namespace, k.ID, k.Path, k.Name, k.NodeType, k.MainNode}
}

// keyColumn returns the key column of a text field.
func keyColumn(field string) (string, bool) {
	switch field {
	case "id":
		return "n.id_key", true
	case "namespace":
		return "n.ns_key", true
	case "path":
		return "n.path_key", true
	case "name":
		return "n.name_key", true
	case "nodeType":
		return "n.type_key", true
	case "mainNode":
		return "n.main_key", true
	}
	return "", false
}

// keyed is a set of folded values a key must equal or (as globs) match.
type keyed struct {
	eq    []string // folded values the key equals
	globs []string // folded globs, each holding a *
}

func (k *keyed) empty() bool { return len(k.eq) == 0 && len(k.globs) == 0 }

// addValue adds a query value, folded; one with a * is a glob.
func (k *keyed) addValue(v string) {
	f := Fold(v)
	if strings.Contains(f, "*") {
		k.globs = append(k.globs, f)
		return
	}
	k.eq = append(k.eq, f)
}

// pred returns the condition "key matches one of k", exact on rows whose
// key is filled. Equalities are one = ANY; a glob is a byte range on its
// literal prefix, and a regular expression on the key (no case variants
// needed) when anything but stars follows that prefix.
func (b *builder) keyPred(key string, k keyed) string {
	var parts []string
	switch len(k.eq) {
	case 0:
	case 1:
		parts = append(parts, key+" = "+b.param(k.eq[0], "text"))
	default:
		parts = append(parts, key+" = ANY("+b.param(k.eq, "text[]")+")")
	}
	for _, g := range k.globs {
		prefix, rest, _ := strings.Cut(g, "*")
		var conj []string
		if prefix != "" {
			conj = append(conj, key+" >= "+b.param(prefix, "text"))
			if upper, ok := prefixUpperBound(prefix); ok {
				conj = append(conj, key+" < "+b.param(upper, "text"))
			}
		}
		if strings.Trim(rest, "*") != "" {
			var re strings.Builder
			re.WriteString("^")
			for _, c := range g {
				if c == '*' {
					re.WriteString(".*")
					continue
				}
				regexRune(&re, c)
			}
			re.WriteString("$")
			conj = append(conj, key+" ~ "+b.param(re.String(), "text"))
		}
		if len(conj) == 0 {
			return "TRUE" // only stars: every key matches
		}
		parts = append(parts, strings.Join(conj, " AND "))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, ") OR (") + ")"
}

// keyMode says which form of a keyed condition the builder writes: the
// statement has one branch per form (see BuildTables).
type keyMode int

const (
	keysOnly    keyMode = iota // rows with keys: conditions on the key columns
	spelledOnly                // rows without keys: the spelled-out patterns
)

// keyedOr returns the keyed condition or its spelled-out form, as the
// builder's mode asks; building only the one asked for keeps unused
// patterns out of the statement.
func (b *builder) keyedOr(keyed func() string, spelled func() pred) pred {
	if b.mode == spelledOnly {
		return spelled()
	}
	b.usedKey = true
	return exactly(keyed())
}

// prefixUpperBound returns the least string greater than every string
// starting with prefix, in byte order (collation "C"): prefix with its last
// rune replaced by the next one. UTF-8 byte order is code point order, so
// the range [prefix, upper) holds exactly the strings starting with prefix.
// ok is false when no such string exists (prefix is only U+10FFFF runes).
func prefixUpperBound(prefix string) (string, bool) {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
		next := r + 1
		if next == 0xD800 { // surrogates are not characters
			next = 0xE000
		}
		if next <= utf8.MaxRune {
			return prefix + string(next), true
		}
	}
	return "", false
}
