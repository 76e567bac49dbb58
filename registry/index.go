package registry

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/internal/indexdigest"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx"
)

// DefaultIndexCacheSize bounds how many assembled index documents a Server
// keeps for one snapshot and catalog version: one per distinct entitlement
// seen since they changed.
const DefaultIndexCacheSize = 1024

// indexDoc is one assembled index, serialised, with its strong ETag.
type indexDoc struct {
	body []byte
	etag string
}

// indexGeneration is what an assembled index was built from, apart from
// the caller: the served snapshot's content generation and the catalog
// version.
type indexGeneration struct {
	content uint64
	catalog uint64
}

func (g indexGeneration) atLeast(o indexGeneration) bool {
	return g.content >= o.content && g.catalog >= o.catalog
}

// indexKey names one assembled index: a generation and the caller's
// entitlement.
type indexKey struct {
	gen         indexGeneration
	entitlement string
}

// indexSlot holds one document, assembled once however many requests ask
// for it at the same moment, and what it was assembled from: the base the
// next generation's document for this entitlement is patched from.
type indexSlot struct {
	once sync.Once
	base *indexBase // nil for a slot not yet assembled
	prev *indexBase // the entitlement's last document, to patch from
}

// indexCache keeps the documents of the newest generation seen, at most max
// of them, and per entitlement (at most max of them, least recently used
// dropped first) its lineage: the last document assembled for it and the
// history of what changed between its recent documents, which deltas are
// answered from. A newer generation drops every older document: they can
// never be asked for again.
type indexCache struct {
	max     int
	history historyBound

	mu       sync.Mutex
	current  indexGeneration
	slots    map[string]*indexSlot // keyed by entitlement, for current
	order    []string              // insertion order, for eviction
	lineages map[string]*lineage   // keyed by entitlement
	tick     uint64                // orders the lineages' use

	assemblies atomic.Int64 // documents assembled, cached or not
}

func newIndexCache(max int) *indexCache {
	if max <= 0 {
		max = DefaultIndexCacheSize
	}
	return &indexCache{max: max, history: defaultHistory, slots: map[string]*indexSlot{}, lineages: map[string]*lineage{}}
}

// get returns the document for key, assembling it with build at most once
// while key's generation is the newest: patched from the last document
// assembled for the same entitlement, when there is one (of any earlier
// generation). A request still holding an older generation gets a fresh
// assembly that is not kept.
func (c *indexCache) get(key indexKey, build func(base *indexBase) *indexBase) indexDoc {
	c.mu.Lock()
	switch {
	case key.gen == c.current:
	case key.gen.atLeast(c.current):
		c.current = key.gen
		clear(c.slots)
		c.order = c.order[:0]
	default:
		c.mu.Unlock()
		return c.assemble(nil, build).doc
	}
	slot, ok := c.slots[key.entitlement]
	if !ok {
		if len(c.order) >= c.max {
			oldest := c.order[0]
			c.order = c.order[1:]
			delete(c.slots, oldest)
		}
		slot = &indexSlot{}
		if ln := c.lineages[key.entitlement]; ln != nil {
			slot.prev = ln.last
		}
		c.slots[key.entitlement] = slot
		c.order = append(c.order, key.entitlement)
	}
	c.mu.Unlock()
	slot.once.Do(func() {
		prev := slot.prev
		b := c.assemble(prev, build)
		b.gen = key.gen
		c.mu.Lock()
		slot.base, slot.prev = b, nil
		c.advance(key.entitlement, prev, b)
		c.mu.Unlock()
	})
	return slot.assembled().doc
}

// assembled returns the slot's document, nil while it is being assembled.
// Called with or without the cache's lock: base is set under it.
func (s *indexSlot) assembled() *indexBase {
	return s.base
}

func (c *indexCache) assemble(prev *indexBase, build func(*indexBase) *indexBase) *indexBase {
	c.assemblies.Add(1)
	return build(prev)
}

// indexBase is one assembled document and what it was assembled from: the
// activation's modules, the catalog, and per module the encoded entry (nil
// when the caller may not install it) and its leaf in the digest tree. The
// next document for the same entitlement re-encodes and re-hashes only the
// modules whose record or package changed and reuses every other entry:
// O(changes) encoding and hashing, one copy of the bytes.
type indexBase struct {
	gen    indexGeneration // what it was assembled from (zero when not kept)
	mods   []landing.Record
	cat    *catalogState
	spans  []span     // per module of mods: where its entry is in doc.body, and its leaf
	leaves [][32]byte // per listed entry, in order: its leaf (indexdigest.Leaf)
	tree   *indexdigest.Tree
	root   [32]byte // the digest of the listed entries: the ETag
	listed int
	size   int // bytes of the listed entries
	// changed names the modules whose entry this document added, changed
	// or removed since the one it was patched from; nil when it was
	// assembled from nothing.
	changed []string
	doc     indexDoc
}

// span locates one module's entry in an indexBase's body, and its leaf in
// leaves; n is 0 for a module the caller may not install. Offsets, not
// slices: a document of 100,000 entries is one object for the garbage
// collector, not 100,001.
type span struct{ off, n, leaf uint32 }

// entry returns the encoded entry of the i-th module, nil when not listed.
func (b *indexBase) entry(i int) []byte {
	sp := b.spans[i]
	if sp.n == 0 {
		return nil
	}
	return b.doc.body[sp.off : sp.off+sp.n]
}

// leaf returns the leaf of the i-th module's entry, zero when not listed.
func (b *indexBase) leaf(i int) [32]byte {
	if sp := b.spans[i]; sp.n != 0 {
		return b.leaves[sp.leaf]
	}
	return [32]byte{}
}

// assembleIndex builds the index document for one caller: every served
// module the caller is entitled to, in the activation's order, with the URL
// it downloads from. allows decides entitlement from the plugin's name and
// tier; a package whose catalog node cannot be read is served to nobody.
func assembleIndex(act landing.Activation, cat *catalogState, baseURL string, allows func(plugin, tier string) bool) []byte {
	return patchIndex(nil, act, cat, baseURL, allows).doc.body
}

// patchIndex assembles the document for act and cat, patching prev (the
// same entitlement's document of an earlier generation) when it can: an
// entry whose module record is unchanged and whose package the catalog did
// not change since prev is reused as it is, and an entry re-encoded to the
// same bytes counts as unchanged. It records which modules' entries
// changed, for the entitlement's delta history.
func patchIndex(prev *indexBase, act landing.Activation, cat *catalogState, baseURL string, allows func(plugin, tier string) bool) *indexBase {
	base := strings.TrimRight(baseURL, "/")
	encode := func(r landing.Record) ([]byte, [32]byte) {
		pkg := cat.lookup(r.Module)
		if pkg.unreadable || !allows(r.Module, pkg.tier) {
			return nil, [32]byte{}
		}
		u := base + client.BundlesPath + "/" + url.PathEscape(r.Module) + "/" + url.PathEscape(r.Version)
		// An entry holds only strings: encoding cannot fail.
		e, _ := json.Marshal(client.IndexEntry{Plugin: r.Module, Version: r.Version, URL: u, SHA256: r.SHA256})
		return e, indexdigest.Leaf(r.Module, r.Version, u, r.SHA256)
	}
	// A catalog version after prev's: which packages it changed, or every
	// one (recheck) when that is not known.
	var catChanged map[string]bool
	recheck := prev == nil
	if prev != nil && prev.cat != cat {
		if cat.changed == nil || cat.version != prev.cat.version+1 {
			recheck = true
		} else {
			catChanged = make(map[string]bool, len(cat.changed))
			for _, k := range cat.changed {
				catChanged[k] = true
			}
		}
	}
	b := &indexBase{mods: act.Modules, cat: cat, spans: make([]span, len(act.Modules))}
	// The document is the entries in order: the bytes json.Marshal of a
	// client.Index writes, without re-encoding them. Written as the walk
	// finds them: no list of entries (100,000 pointers) in between.
	const head, tail = `{"bundles":[`, "]}\n"
	est := len(act.Modules) * 200
	if prev != nil {
		est = prev.size + prev.listed + 4096
		b.leaves = make([][32]byte, 0, prev.listed+64)
	}
	body := make([]byte, 0, len(head)+est+len(tail))
	body = append(body, head...)
	var clean []bool // per listed entry: the digest tree may reuse what prev hashed around it
	if prev != nil {
		b.changed = []string{}
		clean = make([]bool, 0, cap(b.leaves))
	}
	removed := false // an entry prev listed is gone since the last entry listed here
	i := 0           // into prev.mods
	for j, r := range act.Modules {
		var (
			e    []byte
			leaf [32]byte
			kept bool // prev's entry, unchanged
		)
		if prev != nil {
			for i < len(prev.mods) && landing.CompareNames(prev.mods[i].Module, r.Module) < 0 {
				if prev.entry(i) != nil { // a module no longer served
					b.changed = append(b.changed, prev.mods[i].Module)
					removed = true
				}
				i++
			}
		}
		if prev != nil && i < len(prev.mods) && landing.CompareNames(prev.mods[i].Module, r.Module) == 0 {
			old, oldEntry := prev.mods[i], prev.entry(i)
			// moduleKey allocates for a name with capitals: looked up only
			// when the catalog changed packages (one allocation per module
			// per assembly was the patch's largest cost at 100,000).
			if !recheck && old.Module == r.Module && old.Version == r.Version && old.SHA256 == r.SHA256 && (catChanged == nil || !catChanged[moduleKey(r.Module)]) {
				e, leaf, kept = oldEntry, prev.leaf(i), true
			} else if e, leaf = encode(r); bytes.Equal(e, oldEntry) {
				e, leaf, kept = oldEntry, prev.leaf(i), true
			} else {
				b.changed = append(b.changed, r.Module)
				removed = removed || (oldEntry != nil && e == nil) // hidden: a tier change, say
			}
			i++
		} else {
			e, leaf = encode(r) // a module newly served
			if e != nil && prev != nil {
				b.changed = append(b.changed, r.Module)
			}
		}
		if e == nil {
			continue
		}
		if b.listed > 0 {
			body = append(body, ',')
		}
		b.spans[j] = span{off: uint32(len(body)), n: uint32(len(e)), leaf: uint32(len(b.leaves))}
		body = append(body, e...)
		b.leaves = append(b.leaves, leaf)
		if clean != nil {
			clean = append(clean, kept && !removed)
		}
		removed = false
		b.listed++
		b.size += len(e)
	}
	if prev != nil {
		for ; i < len(prev.mods); i++ {
			if prev.entry(i) != nil {
				b.changed = append(b.changed, prev.mods[i].Module)
			}
		}
	}
	body = append(body, tail...)
	// The ETag is the root of the digest tree over the entries listed,
	// re-hashed along the changed entries' paths only.
	var prevTree *indexdigest.Tree
	if prev != nil {
		prevTree = prev.tree
	}
	b.tree = indexdigest.Build(prevTree, b.leaves, func(k int) bool { return clean[k] })
	b.root = b.tree.Root()
	b.doc = indexDoc{body: body, etag: `"` + hex.EncodeToString(b.root[:]) + `"`}
	return b
}

func xorInto(d *[32]byte, s [32]byte) {
	for k := range d {
		d[k] ^= s[k]
	}
}

// indexAnswer serves doc, or 304 when the caller already holds it.
func indexAnswer(doc indexDoc, ifNoneMatch string) answer.Answer {
	h := http.Header{}
	h.Set("ETag", doc.etag)
	// The document is per caller: no shared cache may keep it, and a
	// private one must revalidate.
	h.Set("Cache-Control", "private, no-cache")
	h.Set("Vary", "Authorization")
	if etagMatches(ifNoneMatch, doc.etag) {
		return answer.Answer{Status: http.StatusNotModified, Header: h}
	}
	h.Set("Content-Type", "application/json")
	return answer.Answer{Header: h, Body: doc.body}
}

// etagMatches applies If-None-Match's weak comparison: "*", or any listed
// tag equal to etag once a W/ prefix is ignored.
func etagMatches(header, etag string) bool {
	header = strings.TrimSpace(header)
	if header == "" {
		return false
	}
	if header == "*" {
		return true
	}
	want := strings.TrimPrefix(etag, "W/")
	for tag := range strings.SplitSeq(header, ",") {
		if strings.TrimPrefix(strings.TrimSpace(tag), "W/") == want {
			return true
		}
	}
	return false
}

// activationView is the activation list one index request is assembled
// from: the served snapshot.
type activationView struct {
	act     landing.Activation
	seq     uint64
	content [32]byte
}

// contentGenerations numbers what the served snapshots contain. A
// re-derivation that finds the same modules at the same versions (the
// periodic one, most of the time) keeps the number, so the documents
// assembled from the previous snapshot stay valid. It compares the
// snapshots' content digests: O(1) per new snapshot, whatever the module
// count.
type contentGenerations struct {
	mu  sync.Mutex
	seq uint64   // the newest snapshot seen
	fp  [32]byte // what it contains
	gen uint64
}

// of returns the content generation of the snapshot seq whose content
// digest is fp, and false for a snapshot older than one already seen.
func (c *contentGenerations) of(seq uint64, fp [32]byte) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case seq == c.seq && c.gen > 0:
		return c.gen, true
	case seq < c.seq:
		return 0, false
	}
	if c.gen == 0 || fp != c.fp {
		c.gen++
	}
	c.seq, c.fp = seq, fp
	return c.gen, true
}

// contentDigest digests what an index is assembled from in a list of
// served modules: the XOR of one keyed SHA-256 per module (entryDigest), so
// that replacing, adding or removing one module updates it in O(1)
// (toggled). Module names are unique in a list, so no two digests cancel.
//
// An XOR is linear: whoever knows the per-module digests can choose module
// contents (among a few hundred candidates) whose digests cancel, and so
// make a changed list look unchanged and keep stale documents served. The
// per-module digest is therefore keyed with contentKey, a secret this
// process draws at start and never shows: without it no one can compute a
// digest, let alone solve for a cancelling set. It never leaves the
// process (the index's own digest, sent to clients, is the Merkle root of
// package indexdigest).
func contentDigest(mods []landing.Record) [32]byte {
	var d [32]byte
	for _, r := range mods {
		d = toggled(d, r)
	}
	return d
}

// toggled adds r's digest to d, or takes it out when it is in.
func toggled(d [32]byte, r landing.Record) [32]byte {
	xorInto(&d, entryDigest(r))
	return d
}

// contentKey keys entryDigest. It is drawn once, when the package is
// initialised, and only read after.
var contentKey = func() [32]byte {
	var k [32]byte
	_, _ = rand.Read(k[:]) // crypto/rand.Read does not fail (Go 1.24)
	return k
}()

func entryDigest(r landing.Record) [32]byte {
	var buf [320]byte // names are short: the digest of a module allocates nothing
	b := append(buf[:0], contentKey[:]...)
	for _, f := range [...]string{r.Module, r.Version, r.SHA256} {
		b = append(append(b, f...), 0)
	}
	return sha256.Sum256(b)
}

// activation reads the served snapshot.
func (s *Server) activation(ledger *answer.Ledger) rx.Observable[activationView] {
	return rx.Map(answer.InStage(s.served.Read(), ledger, StageActivation), func(sn Snapshot) activationView {
		return activationView{act: sn.Activation, seq: sn.Seq, content: sn.content}
	})
}

// indexRoute serves GET /api/plugins/bundles/index.json: authentication,
// the served snapshot, the package catalog, then the document kept for
// this caller's entitlement, or 304 when the caller already holds it. With
// client.SinceParam it answers the delta from the document the caller holds
// (see deltaAnswer).
func (s *Server) indexRoute(r *http.Request) rx.Observable[answer.Answer] {
	// One allocation holds what the steps below share, so that each closure
	// captures one pointer: the route runs on every poll.
	type indexRequest struct {
		s           *Server
		ledger      *answer.Ledger
		ifNoneMatch string
		res         auth.Result
		since       [32]byte
		delta       bool
	}
	q := &indexRequest{s: s, ledger: answer.LedgerFrom(r.Context()), ifNoneMatch: r.Header.Get("If-None-Match")}
	if r.URL.RawQuery != "" {
		if v := r.URL.Query().Get(client.SinceParam); v != "" {
			if len(v) != hex.EncodedLen(len(q.since)) || !decodeHex(q.since[:], v) {
				return rx.Return(errorAnswer(http.StatusBadRequest, "registry: "+client.SinceParam+" is not the 64 hex digits of an index digest (its ETag)"))
			}
			q.delta = true
		}
	}
	return s.authenticated(r, func(res auth.Result) rx.Observable[answer.Answer] {
		q.res = res
		// The snapshot and the catalog each answer one value (and the
		// Deadline keeps only the first answer): no Take is needed.
		return rx.SelectMany(q.s.activation(q.ledger), func(v activationView) rx.Observable[answer.Answer] {
			cat := answer.InStage(q.s.catalog.read(), q.ledger, StageCatalog)
			return rx.Map(cat, func(c *catalogState) answer.Answer {
				s, res := q.s, q.res
				build := func(prev *indexBase) *indexBase {
					return patchIndex(prev, v.act, c, s.baseURL, func(plugin, tier string) bool {
						return res.Allows(s.source, plugin, tier)
					})
				}
				gen, current := s.contents.of(v.seq, v.content)
				if !current {
					return indexAnswer(s.index.assemble(nil, build).doc, q.ifNoneMatch)
				}
				entitlement := entitlementKey(res)
				key := indexKey{gen: indexGeneration{content: gen, catalog: c.version}, entitlement: entitlement}
				doc := s.index.get(key, build)
				if q.delta {
					return s.deltaAnswer(entitlement, q.since)
				}
				return indexAnswer(doc, q.ifNoneMatch)
			})
		})
	})
}

// decodeHex decodes the hex of len(dst) bytes into dst.
func decodeHex(dst []byte, s string) bool {
	n, err := hex.Decode(dst, []byte(s))
	return err == nil && n == len(dst)
}

// entitlementKey is everything auth.Result.Allows decides from, in
// canonical form: two callers with equal keys receive the same document.
// Nothing of the request (its Host above all) is in it: the document's
// links start with the server's fixed PublicURL, or are relative.
func entitlementKey(res auth.Result) string {
	entries := make([]string, 0, len(res.Grant.Entries))
	for _, e := range res.Grant.Entries {
		pkg := e.Package
		if pkg == "" {
			pkg = auth.AllPackages
		}
		entries = append(entries, strings.ToLower(strings.TrimSpace(e.Source))+"/"+pkg+"@"+strings.ToLower(strings.TrimSpace(e.Plan)))
	}
	slices.Sort(entries)
	entries = slices.Compact(entries)
	var b strings.Builder
	b.WriteString("grant:")
	b.WriteString(strings.Join(entries, "\x00"))
	b.WriteString("\x00plan:")
	if res.Instance != nil {
		b.WriteString(strings.ToLower(strings.TrimSpace(res.Instance.Plan)))
	}
	b.WriteString("\x00ranks:")
	for _, id := range res.Ranks.IDs() {
		rank, _ := res.Ranks.RankOf(id)
		fmt.Fprintf(&b, "%s=%d/%t\x00", id, rank, res.Ranks.IsAllAccess(id))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}
