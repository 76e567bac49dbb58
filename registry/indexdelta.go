package registry

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
)

// Deltas: a consumer that holds an index document asks for what changed
// since it (client.SinceParam, the document's digest) and gets the entries
// added or changed and the names removed, for its entitlement, with the
// digest of the document they make (client.IndexDelta). The history it is
// answered from is kept per entitlement (a lineage): the documents
// assembled for that entitlement, in order, each with the modules whose
// entries it changed. Only modules the entitlement listed, before or after,
// are ever in it: a delta names nothing the caller could not see, and a
// package that a tier change hides is a removal like any other.
//
// A digest the lineage no longer holds (older than its bound, never seen
// here: another replica's document this one never assembled, or one from
// before a restart) is answered 410 Gone, and the consumer fetches the
// whole document (as Kubernetes answers a stale resourceVersion).

// historyBound bounds one entitlement's delta history: the documents it
// reaches back over, and the module names it holds in all.
type historyBound struct{ points, keys int }

// defaultHistory: a consumer that missed up to 1,024 documents of its
// entitlement (and up to 16,384 entry changes in all) catches up with one
// delta. A document that changes more at once answers deltas from itself
// on only.
var defaultHistory = historyBound{points: 1024, keys: 16384}

// lineage is one entitlement's documents: the last one assembled and the
// history of digests deltas are answered since.
type lineage struct {
	last   *indexBase
	points []historyPoint // oldest first; points[len-1].root is last's
	keys   int            // names held by points[1:]
	used   uint64
}

// historyPoint is one document of a lineage: its digest, the modules whose
// entries changed since the point before, and for each whether the point
// before listed it. A value: never modified once appended, so a reader may
// keep a slice of them.
//
// held is what keeps a removal to the consumers that held the entry: a
// package a tier change showed and a later one hid again, both after the
// document a consumer holds, is no removal for that consumer, and naming
// it would tell it of a package its own document never listed.
type historyPoint struct {
	root    [32]byte
	changed []string
	held    []bool // held[i]: changed[i] was listed by the point before
}

// pointAfter is the point of the document whose digest is root, whose
// entries changed names differ from before's, the lineage's last document.
func pointAfter(before *indexBase, root [32]byte, changed []string) historyPoint {
	held := make([]bool, len(changed))
	for i, name := range changed {
		e, _ := before.lookup(name)
		held[i] = e != nil
	}
	return historyPoint{root: root, changed: changed, held: held}
}

// advance records b, assembled from prev, as entitlement's newest document.
// Called with c.mu held.
func (c *indexCache) advance(entitlement string, prev, b *indexBase) {
	ln := c.lineages[entitlement]
	if ln == nil {
		if len(c.lineages) >= c.max {
			c.evictLineage()
		}
		ln = &lineage{}
		c.lineages[entitlement] = ln
	}
	c.tick++
	ln.used = c.tick
	restart := func() {
		ln.last, ln.points, ln.keys = b, []historyPoint{{root: b.root}}, 0
	}
	switch {
	case ln.last == nil:
		restart()
		return
	case ln.last.gen != b.gen && ln.last.gen.atLeast(b.gen):
		return // an older generation's document, finished late
	case ln.last.root == b.root:
		ln.last = b // the same entries
		return
	case prev == nil || b.changed == nil:
		restart() // no known relation to what the history holds
		return
	}
	changed := b.changed
	if ln.last != prev {
		// Patched from an earlier document of the lineage while another
		// was assembled after it: what changed since that one as well.
		k := ln.find(prev.root)
		if k < 0 {
			restart()
			return
		}
		changed = slices.Clone(changed)
		for _, p := range ln.points[k+1:] {
			changed = append(changed, p.changed...)
		}
	}
	ln.points = append(ln.points, pointAfter(ln.last, b.root, changed))
	ln.keys += len(changed)
	ln.last = b
	for len(ln.points) > 1 && (len(ln.points) > c.history.points || ln.keys > c.history.keys) {
		ln.points = ln.points[1:]
		ln.keys -= len(ln.points[0].changed) // nothing is answered since before the oldest point
	}
}

// find returns the index of the newest point with root, -1 if none.
func (ln *lineage) find(root [32]byte) int {
	for k := len(ln.points) - 1; k >= 0; k-- {
		if ln.points[k].root == root {
			return k
		}
	}
	return -1
}

// evictLineage drops the least recently used lineage. Called with c.mu held.
func (c *indexCache) evictLineage() {
	var (
		oldest string
		used   uint64
		found  bool
	)
	for e, ln := range c.lineages {
		if !found || ln.used < used {
			oldest, used, found = e, ln.used, true
		}
	}
	delete(c.lineages, oldest)
}

// since returns entitlement's newest document and the modules whose
// entries changed after the document whose digest is root; false when the
// lineage does not reach back to it.
func (c *indexCache) since(entitlement string, root [32]byte) (*indexBase, []historyPoint, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ln := c.lineages[entitlement]
	if ln == nil {
		// The lineage was dropped (least recently used) while the
		// entitlement's document of the current generation is still kept
		// (the documents are dropped oldest first): start the history again
		// from it. Nothing would assemble it again before the next
		// generation, and until then every poll would be a 410 and a
		// whole-index request.
		slot := c.slots[entitlement]
		if slot == nil || slot.ready.Load() == nil {
			return nil, nil, false
		}
		c.advance(entitlement, nil, slot.ready.Load())
		ln = c.lineages[entitlement]
	}
	k := ln.find(root)
	if k < 0 {
		return nil, nil, false
	}
	c.tick++
	ln.used = c.tick
	return ln.last, ln.points[k+1:], true
}

// deltaAnswer answers a consumer holding the document whose digest is
// since from entitlement's history: 304 when it is the newest assembled,
// else the delta to the newest; false, with the 410 Gone to send, when the
// history does not reach back to since.
func (s *Server) deltaAnswer(entitlement string, since [32]byte) (answer.Answer, bool) {
	last, points, ok := s.index.since(entitlement, since)
	if !ok {
		a := errorAnswer(http.StatusGone, "registry: the index this consumer holds ("+hex.EncodeToString(since[:])+
			") is not in this server's history for its entitlement; fetch the whole index (without "+client.SinceParam+")")
		return a, false
	}
	if len(points) == 0 {
		return answer.Answer{Status: http.StatusNotModified, Header: last.notModified}, true
	}
	h := indexHeader(last.etag, 2)
	h.set("Content-Type", "application/json")
	h.set(http.CanonicalHeaderKey(client.IndexSinceHeader), hex.EncodeToString(since[:]))
	return answer.Answer{Header: h.h, Body: deltaBody(last, since, points)}, true
}

// deltaBody writes the client.IndexDelta from the document after since to
// last: last's entry (its bytes, as in its body) for every module changed
// and still listed, its name for every one no longer listed that the
// document since listed (the point where it first changed after since
// says whether the document before it listed it: unchanged until then,
// that is the document since's answer).
func deltaBody(last *indexBase, since [32]byte, points []historyPoint) []byte {
	type change struct {
		name string
		held bool
	}
	n := 0
	for _, p := range points {
		n += len(p.changed)
	}
	changes := make([]change, 0, n)
	for _, p := range points {
		for i, name := range p.changed {
			changes = append(changes, change{name: name, held: p.held[i]})
		}
	}
	// Stable, so that the first of equal names, which the compaction
	// keeps, is the first change after since.
	slices.SortStableFunc(changes, func(a, b change) int { return landing.CompareNames(a.name, b.name) })
	changes = slices.CompactFunc(changes, func(a, b change) bool { return landing.CompareNames(a.name, b.name) == 0 })
	var removed []string
	body := make([]byte, 0, 256+len(changes)*200)
	body = append(body, `{"since":"`...)
	body = hex.AppendEncode(body, since[:])
	body = append(body, `","digest":"`...)
	body = hex.AppendEncode(body, last.root[:])
	body = append(body, `","count":`...)
	body = appendInt(body, last.listed)
	body = append(body, `,"bundles":[`...)
	first := true
	for _, c := range changes {
		e, _ := last.lookup(c.name)
		if e == nil {
			if c.held {
				removed = append(removed, c.name)
			}
			continue
		}
		if !first {
			body = append(body, ',')
		}
		first = false
		body = append(body, e...)
	}
	body = append(body, `],"removed":`...)
	if removed == nil {
		removed = []string{}
	}
	r, _ := json.Marshal(removed) // strings: encoding cannot fail
	body = append(body, r...)
	return append(body, "}\n"...)
}

func appendInt(b []byte, v int) []byte {
	r, _ := json.Marshal(v)
	return append(b, r...)
}
