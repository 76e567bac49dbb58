package registry

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
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
	once    sync.Once
	claimed atomic.Bool               // a request is assembling it, or has
	ready   atomic.Pointer[indexBase] // nil until assembled
	prev    *indexBase                // the entitlement's last document, to patch from
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
// generation). A request still holding an older generation gets the
// entitlement's last document when that one is of a generation at least
// as new in both parts (newest), else a fresh assembly that is not kept.
//
// With wait false, a request that finds another one assembling the
// document does not wait for it: it returns nil, and answers from what is
// already assembled (a delta from the entitlement's history). The request
// that claims the assembly always does it.
func (c *indexCache) get(key indexKey, build func(base *indexBase) *indexBase, wait bool) *indexBase {
	c.mu.Lock()
	switch {
	case key.gen == c.current:
	case key.gen.atLeast(c.current):
		c.current = key.gen
		clear(c.slots)
		c.order = c.order[:0]
	default:
		b := c.newestLocked(key)
		c.mu.Unlock()
		if b != nil {
			return b
		}
		return c.assemble(nil, build)
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
	if b := slot.ready.Load(); b != nil {
		return b
	}
	if !slot.claimed.CompareAndSwap(false, true) && !wait {
		return nil
	}
	slot.once.Do(func() {
		prev := slot.prev
		b := c.assemble(prev, build)
		b.gen = key.gen
		c.mu.Lock()
		slot.prev = nil
		c.advance(key.entitlement, prev, b)
		c.mu.Unlock()
		slot.ready.Store(b)
	})
	return slot.ready.Load()
}

// newest returns the last document assembled for key's entitlement when
// its generation is at least key's in both parts (content and catalog),
// else nil.
//
// It answers a request that read its snapshot or catalog before a
// publication and reached the cache after a newer request had moved it on:
// what it may see at a later generation, for the same entitlement, is
// that document. It used to assemble its own document from nothing, not
// kept: O(modules) of encoding per late request (1.7 MB at 10,000 modules,
// 17.6 MB at 100,000), and under load the late requests are many. In a
// profile of 10,000 modules × 256 pollers with one publication a second on
// a loaded machine those assemblies were 61 % of the registry's CPU, which
// made more requests late: a pile-up feeding itself.
func (c *indexCache) newest(key indexKey) *indexBase {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.newestLocked(key)
}

func (c *indexCache) newestLocked(key indexKey) *indexBase {
	ln := c.lineages[key.entitlement]
	if ln == nil || ln.last == nil || !ln.last.gen.atLeast(key.gen) {
		return nil
	}
	return ln.last
}

func (c *indexCache) assemble(prev *indexBase, build func(*indexBase) *indexBase) *indexBase {
	c.assemblies.Add(1)
	return build(prev)
}

// indexBase is one assembled document and what it was assembled from: the
// activation's modules, the catalog, and the listed entries as segments
// (see indexsegments.go). The next document for the same entitlement
// re-encodes only the modules whose record or package changed and rebuilds
// only the segments they fall in: O(changes) encoding, hashing and copying.
type indexBase struct {
	gen  indexGeneration // what it was assembled from (zero when not kept)
	mods moduleList
	cat  *catalogState
	segs []*segment
	root [32]byte // the digest of the listed entries: the ETag
	etag string
	// notModified is the header of every 304 answered for this document:
	// built with it, shared by those answers and never modified (the
	// answer's writer copies each value, clipped, into the response).
	notModified http.Header
	listed      int
	size        int // bytes of the body
	// changed names the modules whose entry this document added, changed
	// or removed since the one it was patched from; nil when it was
	// assembled from nothing.
	changed []string
}

// lookup returns module name's entry and its leaf, nil when not listed.
func (b *indexBase) lookup(name string) ([]byte, [32]byte) { return lookup(b.segs, name) }

// bytes returns the whole body in one slice (a copy).
func (b *indexBase) bytes() []byte {
	var buf bytes.Buffer
	buf.Grow(b.size)
	_ = writeBody(&buf, b.segs) // a bytes.Buffer does not fail
	return buf.Bytes()
}

// assembleIndex builds the index document for one caller: every served
// module the caller is entitled to, in the activation's order, with the URL
// it downloads from. allows decides entitlement from the plugin's name and
// tier; a package whose catalog node cannot be read is served to nobody.
func assembleIndex(act landing.Activation, cat *catalogState, baseURL string, allows func(plugin, tier string) bool) []byte {
	return patchIndex(nil, newModuleList(act.Modules), cat, baseURL, allows).bytes()
}

// patchIndex assembles the document for act and cat, patching prev (the
// same entitlement's document of an earlier generation) when it can: an
// entry whose module record is unchanged and whose package the catalog did
// not change since prev is reused as it is, and an entry re-encoded to the
// same bytes counts as unchanged. It records which modules' entries
// changed, for the entitlement's delta history.
//
// The walk over the two module lists skips the chunks they share and
// compares the other records in place (no allocation per module); what it
// allocates is the changed entries, the segments they fall in, and one
// pointer and one hash per segment.
func patchIndex(prev *indexBase, mods moduleList, cat *catalogState, baseURL string, allows func(plugin, tier string) bool) *indexBase {
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
	b := &indexBase{mods: mods, cat: cat}
	if prev == nil {
		g := &segmenter{}
		for _, c := range mods.chunks {
			for i := range c.len() {
				r := c.peek(i)
				if e, leaf := encode(r); e != nil {
					g.add(strings.Clone(r.Module), e, leaf) // the entry outlives the chunk
				}
			}
		}
		g.close()
		b.segs = g.out
	} else {
		b.segs, b.changed = patchSegments(prev, mods, cat, encode)
	}
	for _, sg := range b.segs {
		b.listed += len(sg.ents)
	}
	b.size = bodySize(b.segs)
	// The ETag is the root of the digest tree over the entries listed:
	// its level 1 is the segments' hashes.
	b.root = indexdigest.RootOfChunks(b.listed, level1(b.segs, b.listed))
	b.etag = `"` + hex.EncodeToString(b.root[:]) + `"`
	b.notModified = indexHeader(b.etag, 0).h
	return b
}

// anyWithin reports whether sorted (in landing.CompareNames order) holds a
// name from first to last, both included: one binary search, where a
// comparison with every changed package per chunk was O(chunks × changes)
// for a catalog change of many packages.
func anyWithin(sorted []string, first, last string) bool {
	i, _ := slices.BinarySearchFunc(sorted, first, landing.CompareNames)
	return i < len(sorted) && landing.CompareNames(sorted[i], last) <= 0
}

// patchSegments returns prev's segments with the entries of mods and cat
// that differ from prev's applied, and the modules whose entries differ.
// A chunk of mods that prev's list holds too (the same chunk, shared
// between snapshots) is skipped whole, unless the catalog changed a package
// it may hold: a publication walks the chunks it changed, not every module.
func patchSegments(prev *indexBase, mods moduleList, cat *catalogState, encode func(landing.Record) ([]byte, [32]byte)) ([]*segment, []string) {
	// A catalog version after prev's: which packages it changed (module
	// keys, in index order), or every one (recheck) when that is not known.
	// CompareNames equates two names exactly when their keys are equal, so
	// the sorted keys are searched with a module's name as it is: no set
	// beside them, and no key made (allocated) per module.
	var catSorted []string
	recheck := false
	if prev.cat != cat {
		if cat.changed == nil || cat.version != prev.cat.version+1 {
			recheck = true
		} else {
			catSorted = slices.Clone(cat.changed)
			slices.SortFunc(catSorted, landing.CompareNames)
		}
	}
	catChanged := func(module string) bool {
		_, found := slices.BinarySearchFunc(catSorted, module, landing.CompareNames)
		return found
	}
	// skippable reports whether a shared chunk holds no module whose
	// package the catalog changed (cat.changed holds module keys).
	skippable := func(c *modChunk) bool {
		return !recheck && !anyWithin(catSorted, c.module(0), c.module(c.len()-1))
	}
	var edits []edit
	changed := []string{}
	// The names of edits and changed are kept (by the document and its
	// history), the records' are in their chunks' arenas: they are cloned.
	gone := func(name string) { // prev's module is no longer served
		if e, _ := prev.lookup(name); e != nil {
			name = strings.Clone(name)
			edits = append(edits, edit{name: name})
			changed = append(changed, name)
		}
	}
	old := prev.mods.chunks
	pc, pi := 0, 0 // into prev's list: chunk, record
	// at returns the record prev's cursor is at (moving it over the end of
	// a chunk), in place (modChunk.peek); false past prev's last.
	at := func() (landing.Record, bool) {
		for pc < len(old) {
			if pi < old[pc].len() {
				return old[pc].peek(pi), true
			}
			pc, pi = pc+1, 0
		}
		return landing.Record{}, false
	}
	for _, c := range mods.chunks {
		// Whatever prev lists before this chunk is no longer served.
		for r, ok := at(); ok && landing.CompareNames(r.Module, c.module(0)) < 0; r, ok = at() {
			gone(r.Module)
			pi++
		}
		if _, ok := at(); ok && pi == 0 && old[pc] == c && skippable(c) {
			pc++ // the same records: the same entries
			continue
		}
		for i := range c.len() {
			r := c.peek(i)
			o, ok := at()
			for ; ok && landing.CompareNames(o.Module, r.Module) < 0; o, ok = at() {
				gone(o.Module)
				pi++
			}
			if ok && landing.CompareNames(o.Module, r.Module) == 0 {
				pi++
				// Looked up only when the catalog changed packages.
				if !recheck && o.Module == r.Module && o.Version == r.Version && o.SHA256 == r.SHA256 && (catSorted == nil || !catChanged(r.Module)) {
					continue
				}
				e, leaf := encode(r)
				if oldEntry, _ := prev.lookup(o.Module); bytes.Equal(e, oldEntry) {
					continue
				}
				name := strings.Clone(r.Module)
				edits = append(edits, edit{name: name, e: e, leaf: leaf})
				changed = append(changed, name)
				continue
			}
			if e, leaf := encode(r); e != nil { // a module newly served
				name := strings.Clone(r.Module)
				edits = append(edits, edit{name: name, e: e, leaf: leaf})
				changed = append(changed, name)
			}
		}
	}
	for r, ok := at(); ok; r, ok = at() {
		gone(r.Module)
		pi++
	}
	if len(edits) == 0 {
		return prev.segs, changed
	}
	return applyEdits(prev.segs, edits), changed
}

func xorInto(d *[32]byte, s [32]byte) {
	for k := range d {
		d[k] ^= s[k]
	}
}

// indexAnswer serves doc, or 304 when the caller already holds it. The
// body is written segment by segment, with its length declared.
func indexAnswer(doc *indexBase, ifNoneMatch string) answer.Answer {
	if etagMatches(ifNoneMatch, doc.etag) {
		return answer.Answer{Status: http.StatusNotModified, Header: doc.notModified}
	}
	h := indexHeader(doc.etag, 2)
	h.set("Content-Type", "application/json")
	h.set("Content-Length", strconv.Itoa(doc.size))
	segs := doc.segs
	return answer.Answer{Header: h.h, Stream: func(w io.Writer) error { return writeBody(w, segs) }}
}

// indexHeader starts the header of an index answer (a document, a delta or
// a 304): its ETag, and, the document being per caller, that no shared
// cache may keep it and a private one must revalidate. It has room for n
// more values. An answer is built on every poll: the values share one
// array (the answer's writer clips each, so an append to the response's
// header does not write into it).
func indexHeader(etag string, n int) answerHeader {
	h := answerHeader{h: make(http.Header, 3+n), vals: make([]string, 0, 3+n)}
	h.set("Etag", etag)
	h.set("Cache-Control", "private, no-cache")
	h.set("Vary", "Authorization")
	return h
}

// answerHeader is a header whose values share one array.
type answerHeader struct {
	h    http.Header
	vals []string
}

// set sets the canonical key to the single value v.
func (a *answerHeader) set(key, v string) {
	a.vals = append(a.vals, v)
	n := len(a.vals)
	a.h[key] = a.vals[n-1 : n : n]
}

// ifNoneMatch is the request's If-None-Match list, whether it came as one
// field line or several (RFC 9110 §5.3: their values joined with commas).
func ifNoneMatch(h http.Header) string {
	vs := h.Values("If-None-Match")
	if len(vs) > 1 {
		return strings.Join(vs, ",")
	}
	return h.Get("If-None-Match")
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
	mods    moduleList
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
// digest is fp, and, with false, the newest one's for a snapshot older
// than one already seen.
func (c *contentGenerations) of(seq uint64, fp [32]byte) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case seq == c.seq && c.gen > 0:
		return c.gen, true
	case seq < c.seq:
		return c.gen, false
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
		return activationView{mods: sn.mods, seq: sn.Seq, content: sn.content}
	})
}

// indexRoute serves GET /api/plugins/bundles/index.json: authentication,
// the served snapshot, the package catalog, then the document kept for
// this caller's entitlement, or 304 when the caller already holds it. With
// client.SinceParam it answers the delta from the document the caller holds
// (see deltaAnswer).
func (s *Server) indexRoute(r *http.Request) rx.Observable[answer.Answer] {
	q := &indexRequest{s: s, ledger: answer.LedgerFrom(r.Context()), ifNoneMatch: ifNoneMatch(r.Header)}
	if r.URL.RawQuery != "" {
		v, n, err := queryValues(r.URL, client.SinceParam)
		switch {
		case err != nil:
			return rx.Return(errorAnswer(http.StatusBadRequest, "registry: the query could not be read, so neither could its "+client.SinceParam+" parameter: "+err.Error()))
		case n > 1:
			// Which one the caller holds cannot be told: answering the
			// first would be a guess (and a cache or proxy may keep
			// another).
			return rx.Return(errorAnswer(http.StatusBadRequest, "registry: "+client.SinceParam+" is given "+strconv.Itoa(n)+
				" times; give it once, the digest (ETag) of the one index this consumer holds"))
		}
		if v != "" {
			if len(v) != hex.EncodedLen(len(q.since)) || !decodeHex(q.since[:], v) {
				return rx.Return(errorAnswer(http.StatusBadRequest, "registry: "+client.SinceParam+" is not the 64 hex digits of an index digest (its ETag)"))
			}
			q.delta = true
		}
	}
	return s.authenticated(r, s.indexBudget, q.authenticated)
}

// indexRequest is one index request: one allocation holds what its steps
// share, so that each step's closure captures one pointer (the route runs
// on every poll).
type indexRequest struct {
	s           *Server
	ledger      *answer.Ledger
	ifNoneMatch string
	res         auth.Result
	since       [32]byte
	delta       bool
}

// authenticated goes on once the caller is known. Between a publication's
// derivation and the next, the snapshot and the catalog are both there
// and answer at once (each then one stage entered and finished in the
// ledger, as a read that answered at once is): the document is answered
// in the same call, without a stream per read. Otherwise each is read as a
// stream, bounded by the route's budget; the snapshot and the catalog each
// answer one value (and the Deadline keeps only the first answer), so no
// Take is needed.
func (q *indexRequest) authenticated(res auth.Result) rx.Observable[answer.Answer] {
	q.res = res
	s := q.s
	sn, _, ok := s.served.readNow()
	if !ok {
		return rx.SelectMany(s.activation(q.ledger), func(v activationView) rx.Observable[answer.Answer] {
			return q.withActivation(v)
		})
	}
	q.ledger.Enter(StageActivation).Finish()
	return q.withActivation(activationView{mods: sn.mods, seq: sn.Seq, content: sn.content})
}

func (q *indexRequest) withActivation(v activationView) rx.Observable[answer.Answer] {
	if c, ok := q.s.catalog.current(); ok {
		q.ledger.Enter(StageCatalog).Finish()
		return answer.Now(q.answer(v, c))
	}
	cat := answer.InStage(q.s.catalog.read(), q.ledger, StageCatalog)
	return rx.Map(cat, func(c *catalogState) answer.Answer { return q.answer(v, c) })
}

// answer answers from the snapshot's modules v and the catalog c.
func (q *indexRequest) answer(v activationView, c *catalogState) answer.Answer {
	s, res := q.s, q.res
	build := func(prev *indexBase) *indexBase {
		return patchIndex(prev, v.mods, c, s.baseURL, func(plugin, tier string) bool {
			return res.Allows(s.source, plugin, tier)
		})
	}
	gen, current := s.contents.of(v.seq, v.content)
	entitlement := s.keys.key(res)
	key := indexKey{gen: indexGeneration{content: gen, catalog: c.version}, entitlement: entitlement}
	if !current {
		// The snapshot this request read is older than one another request
		// has seen (gen is that one's): the entitlement's document of a
		// generation at least as new answers it (indexCache.newest), a
		// delta from its history as any delta is.
		b := s.index.newest(key)
		if b == nil {
			return indexAnswer(s.index.assemble(nil, build), q.ifNoneMatch)
		}
		if q.delta {
			a, _ := s.deltaAnswer(entitlement, q.since)
			return a
		}
		return indexAnswer(b, q.ifNoneMatch)
	}
	if q.delta {
		// A delta does not wait for another request's patch of the
		// document when the history already answers it (a poll racing a
		// publication gets the document before it, and the publication on
		// its next poll).
		if s.index.get(key, build, false) == nil {
			if a, ok := s.deltaAnswer(entitlement, q.since); ok {
				return a
			}
			s.index.get(key, build, true)
		}
		a, _ := s.deltaAnswer(entitlement, q.since)
		return a
	}
	return indexAnswer(s.index.get(key, build, true), q.ifNoneMatch)
}

// queryValue is url.URL.Query().Get(key) without building the map for a
// plain query (no escapes, no semicolons, at most 100 parameters: what a
// client sends), which is every poll's. A query url.ParseQuery cannot read
// (a bad escape, a ';', more parameters than its limit) that mentions key
// is an error: the caller's key may be among what it dropped, and it must
// not be answered as if it were absent.
//
// The plain path assumes net/url's parameter limit is at least 101:
// url.ParseQuery admits n parameters only when n is below the limit, and
// the plain path reads up to 100 (99 '&'). The default limit is 10,000; a
// GODEBUG=urlmaxqueryparams of 1 to 100 would make url.ParseQuery refuse
// queries the plain path reads. From 100 '&' (101 parameters) on, a query
// goes through url.ParseQuery and its limit.
func queryValue(u *url.URL, key string) (string, error) {
	v, _, err := queryValues(u, key)
	return v, err
}

// queryValues is queryValue and how many times key is given (as
// len(url.URL.Query()[key]) counts it).
func queryValues(u *url.URL, key string) (first string, n int, err error) {
	raw := u.RawQuery
	if strings.ContainsAny(raw, "%+;") || strings.Count(raw, "&") >= 100 {
		vals, err := url.ParseQuery(raw)
		if err != nil && (strings.Contains(raw, key) || vals.Has(key)) {
			return "", 0, err
		}
		return vals.Get(key), len(vals[key]), nil
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if k, v, _ := strings.Cut(pair, "="); k == key {
			if n == 0 {
				first = v
			}
			n++
		}
	}
	return first, n, nil
}

// decodeHex decodes the hex of len(dst) bytes into dst.
func decodeHex(dst []byte, s string) bool {
	n, err := hex.Decode(dst, []byte(s))
	return err == nil && n == len(dst)
}
