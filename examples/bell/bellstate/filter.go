package bellstate

// idFilter is a small Bloom filter of the ids a state holds, so that a put
// of a notification it does not hold (nearly every put: a broadcast's new
// notification) is known new without comparing it with each one held.
// bellload applies a broadcast to 10,000 states of tens of notifications
// each; that search was ≈ 7 % of its CPU (perf, the
// -viewers 1000 -admins 10000 run). It may say an id is held when it is
// not (the search then settles it), never the reverse: bits are only
// added, and a drop makes the filter again from what is left.
type idFilter [4]uint64 // 256 bits, two per id: ≈ 5 % false "may hold" at 30 ids

// add records id.
func (f *idFilter) add(id string) {
	h := fnv64(id)
	f[h>>6&3] |= 1 << (h & 63)
	f[h>>14&3] |= 1 << (h >> 8 & 63)
}

// mayHold reports whether id may have been added.
func (f *idFilter) mayHold(id string) bool {
	h := fnv64(id)
	return f[h>>6&3]&(1<<(h&63)) != 0 && f[h>>14&3]&(1<<(h>>8&63)) != 0
}

// fnv64 is FNV-1a of s: no allocation, no seed to hold.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
