package registry

import (
	"bytes"
	"crypto/sha256"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/meshrx/meshrx/auth"
)

// entitlementKey is everything auth.Result.Allows decides from, in
// canonical form: two callers with equal keys receive the same document.
// Nothing of the request (its Host above all) is in it: the document's
// links start with the server's fixed PublicURL, or are relative.
//
// The canonical text is
//
//	grant:<entries, sorted and unique, joined by NUL>\x00plan:<plan>\x00ranks:<id>=<rank>/<all-access>\x00...
//
// each entry source/package@plan, an empty package "*". Every field is
// folded exactly as the access check compares it, never more: source and
// package as GrantEntry.Matches does (mesh.EqualNames: ASCII case only, no
// trimming), plans as the ladder does (trimmed, mesh.FoldName). A wider
// fold (Unicode lower case, say, which maps the Kelvin sign to 'k') would
// give one key to callers Allows tells apart, and so share one document
// between them. The key is the text's SHA-256 (32 bytes as a string).
func entitlementKey(res auth.Result) string {
	return new(keyScratch).key(res)
}

// keyScratch is entitlementKey's buffers. It runs on every poll: the text
// is built in them and the entries sorted as spans of it, so with buffers
// kept from an earlier key (keyScratches) a grant of a few entries and a
// ladder of a few tiers cost one allocation, the key's. The buffers were
// arrays on the stack (2 KB): that frame, under net/http's and the
// route's, grew each connection goroutine's stack on every poll after the
// collector had shrunk it (runtime.newstack, all of it from this function,
// 3.5 % of the registry's CPU and the shrinks 6.4 %, 10,000 modules × 256
// pollers).
type keyScratch struct {
	ents  []byte
	spans []entrySpan
	text  []byte
	ids   []string
}

// keyScratches keeps keyScratch buffers for the polls (a field of the
// Server: there is no package-level state).
type keyScratches struct{ pool sync.Pool }

// key is entitlementKey(res) with buffers kept from earlier calls.
func (k *keyScratches) key(res auth.Result) string {
	sc, _ := k.pool.Get().(*keyScratch)
	if sc == nil {
		sc = new(keyScratch)
	}
	key := sc.key(res)
	if cap(sc.ents)+cap(sc.text) <= maxKeptKeyScratch {
		k.pool.Put(sc)
	}
	return key
}

// maxKeptKeyScratch bounds the text a kept keyScratch holds: a grant of
// thousands of entries is keyed with buffers of its own, not kept.
const maxKeptKeyScratch = 16 << 10

func (sc *keyScratch) key(res auth.Result) string {
	ents := sc.ents[:0]
	spans := sc.spans[:0]
	for _, e := range res.Grant.Entries {
		pkg := e.Package
		if pkg == "" {
			pkg = auth.AllPackages
		}
		start := len(ents)
		ents = appendFoldName(ents, e.Source)
		ents = append(ents, '/')
		ents = appendFoldName(ents, pkg)
		ents = append(ents, '@')
		ents = appendFoldName(ents, strings.TrimSpace(e.Plan))
		spans = append(spans, entrySpan{start, len(ents)})
	}
	slices.SortFunc(spans, func(a, b entrySpan) int { return bytes.Compare(ents[a.from:a.to], ents[b.from:b.to]) })
	spans = slices.CompactFunc(spans, func(a, b entrySpan) bool { return bytes.Equal(ents[a.from:a.to], ents[b.from:b.to]) })

	b := append(sc.text[:0], "grant:"...)
	for k, sp := range spans {
		if k > 0 {
			b = append(b, 0)
		}
		b = append(b, ents[sp.from:sp.to]...)
	}
	b = append(b, "\x00plan:"...)
	if res.Instance != nil {
		b = appendFoldName(b, strings.TrimSpace(res.Instance.Plan))
	}
	b = append(b, "\x00ranks:"...)
	ids := res.Ranks.AppendIDs(sc.ids[:0])
	for _, id := range ids {
		rank, _ := res.Ranks.RankOf(id)
		b = append(b, id...)
		b = append(b, '=')
		b = strconv.AppendInt(b, int64(rank), 10)
		b = append(b, '/')
		b = strconv.AppendBool(b, res.Ranks.IsAllAccess(id))
		b = append(b, 0)
	}
	sum := sha256.Sum256(b)
	clear(ids) // the kept buffer does not hold the ladder's names
	sc.ents, sc.spans, sc.text, sc.ids = ents, spans, b, ids[:0]
	return string(sum[:])
}

// entrySpan is one canonical grant entry in entitlementKey's scratch text.
type entrySpan struct{ from, to int }

// appendFoldName appends mesh.FoldName(s) to b: 'A'–'Z' lowered, every
// other byte as it is, without allocating.
func appendFoldName(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}
