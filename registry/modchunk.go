package registry

import (
	"time"
	"unsafe"

	"github.com/meshrx/meshrx/registry/landing"
)

// modChunk is one run of a moduleList's records, never modified once
// built. The records are kept packed, without a pointer among them: every
// string of a chunk's records in one byte arena, each record an offset and
// lengths into it, its times as seconds and nanoseconds. The collector
// scans none of it (a chunk is three pointers), where a landing.Record is
// eight pointer words: at 100,000 modules the snapshot's records were ~20
// MB the mark had to walk on every cycle, and the mark's length is what
// sets p99 there (docs/index-deltas.md, The tail).
type modChunk struct {
	recs  []packedRecord
	arena []byte           // the records' strings, record by record, never modified
	locs  []*time.Location // the distinct locations of the records' times
}

// packedRecord is a landing.Record in a modChunk: its strings at arena[at:],
// one after the other in the order of recordStrings, of lens' lengths. It
// must hold no pointer (TestAPackedRecordHoldsNoPointer).
type packedRecord struct {
	at               uint32
	lens             [recordStrings]uint32
	size             int64
	landed, recorded packedTime
}

// A chunk's arena is addressed with 32-bit offsets: its records' strings
// must stay below 4 GiB. A record's strings are at most three times its
// file (JSON decoding turns a byte of invalid UTF-8 into the three of
// U+FFFD), which landing bounds, and a chunk holds at most listChunkMax
// records: this constant does not compile when that product overflows.
const _ uint32 = listChunkMax * 3 * landing.MaxRecordBytes

// recordStrings is the number of string fields of a landing.Record:
// Module, State, Version, Generation, SHA256, Replica, ID.
const recordStrings = 7

// packedTime is a time.Time without its monotonic reading (a record's
// times have none: they are made by time.Unix or read from JSON), its
// location an index into the chunk's locs.
type packedTime struct {
	sec  int64
	nsec int32
	loc  int32
}

// newChunk packs recs (sorted, one per module) into a chunk. It keeps
// nothing of recs.
func newChunk(recs []landing.Record) *modChunk {
	n := 0
	for i := range recs {
		r := &recs[i]
		n += len(r.Module) + len(r.State) + len(r.Version) + len(r.Generation) + len(r.SHA256) + len(r.Replica) + len(r.ID)
	}
	c := &modChunk{recs: make([]packedRecord, len(recs)), arena: make([]byte, 0, n)}
	for i := range recs {
		r := &recs[i]
		p := &c.recs[i]
		p.at = uint32(len(c.arena))
		for k, s := range [recordStrings]string{r.Module, string(r.State), r.Version, r.Generation, r.SHA256, r.Replica, r.ID} {
			p.lens[k] = uint32(len(s))
			c.arena = append(c.arena, s...)
		}
		p.size = r.Size
		p.landed, p.recorded = c.packTime(r.LandedAt), c.packTime(r.RecordedAt)
	}
	return c
}

func (c *modChunk) packTime(t time.Time) packedTime {
	loc := t.Location()
	k := 0
	for k < len(c.locs) && c.locs[k] != loc {
		k++
	}
	if k == len(c.locs) {
		c.locs = append(c.locs, loc)
	}
	return packedTime{sec: t.Unix(), nsec: int32(t.Nanosecond()), loc: int32(k)}
}

func (c *modChunk) time(p packedTime) time.Time {
	return time.Unix(p.sec, int64(p.nsec)).In(c.locs[p.loc])
}

// len is the number of records in the chunk.
func (c *modChunk) len() int { return len(c.recs) }

// module returns the module of record i, in place: for comparing, not to
// be kept (it would keep the whole arena).
func (c *modChunk) module(i int) string {
	p := &c.recs[i]
	return c.view(p.at, p.lens[0])
}

// record returns record i with strings of its own (one allocation), to be
// kept anywhere.
func (c *modChunk) record(i int) landing.Record {
	p := &c.recs[i]
	n := uint32(0)
	for _, l := range p.lens {
		n += l
	}
	return c.unpack(p, string(c.arena[p.at:p.at+n]))
}

// peek returns record i with its strings in place in the arena: for the
// walks that only compare, hash or encode records, or pack them into a
// new chunk (which copies). Nothing of it may be kept beyond that: a kept
// string would keep the whole arena alive after the chunk is gone.
func (c *modChunk) peek(i int) landing.Record {
	p := &c.recs[i]
	n := uint32(0)
	for _, l := range p.lens {
		n += l
	}
	return c.unpack(p, c.view(p.at, n))
}

// peekAll returns the chunk's records as peek does.
func (c *modChunk) peekAll() []landing.Record {
	out := make([]landing.Record, len(c.recs))
	for i := range c.recs {
		out[i] = c.peek(i)
	}
	return out
}

// view is arena[at:at+n] as a string, without a copy (the arena is never
// modified once the chunk is built).
func (c *modChunk) view(at, n uint32) string {
	if n == 0 {
		return ""
	}
	return unsafe.String(&c.arena[at], int(n))
}

// unpack makes the record of p from s, its strings laid end to end.
func (c *modChunk) unpack(p *packedRecord, s string) landing.Record {
	var f [recordStrings]string
	for k, l := range p.lens {
		f[k], s = s[:l], s[l:]
	}
	return landing.Record{
		Module: f[0], State: landing.State(f[1]), Version: f[2], Generation: f[3], SHA256: f[4],
		Size: p.size, LandedAt: c.time(p.landed), RecordedAt: c.time(p.recorded),
		Replica: f[5], ID: f[6],
	}
}
