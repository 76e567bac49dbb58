package registry

import "math"

// layered is a map that each catalog version shares with the one before
// it: a base map that is never modified, and an overlay of the entries
// changed since the base was built. A new version copies the overlay, not
// the base, and the two are merged into a new base once the overlay holds
// more than about the square root of the base's entries: a change costs
// O(√n) amortised instead of a copy of every package. A layered value is
// never modified once built; with returns a new one.
type layered[V any] struct {
	base map[string]V
	over map[string]overlay[V]
	n    int // entries present
}

// overlay is one changed entry: its value, or gone when it was deleted.
type overlay[V any] struct {
	v    V
	gone bool
}

// newLayered returns a layered map holding m, which it keeps: the caller
// must not modify m afterwards.
func newLayered[V any](m map[string]V) *layered[V] {
	return &layered[V]{base: m, n: len(m)}
}

func (m *layered[V]) get(k string) (V, bool) {
	if m == nil {
		var zero V
		return zero, false
	}
	if o, ok := m.over[k]; ok {
		return o.v, !o.gone
	}
	v, ok := m.base[k]
	return v, ok
}

// len returns the number of entries present.
func (m *layered[V]) len() int {
	if m == nil {
		return 0
	}
	return m.n
}

// with returns m with changes applied (gone deletes).
func (m *layered[V]) with(changes map[string]overlay[V]) *layered[V] {
	if m == nil {
		m = newLayered[V](nil)
	}
	next := &layered[V]{base: m.base, over: make(map[string]overlay[V], len(m.over)+len(changes)), n: m.n}
	for k, o := range m.over {
		next.over[k] = o
	}
	for k, o := range changes {
		_, had := next.get(k)
		switch {
		case had && o.gone:
			next.n--
		case !had && !o.gone:
			next.n++
		}
		next.over[k] = o
	}
	if len(next.over) > 64+int(math.Sqrt(float64(len(next.base)))) {
		merged := make(map[string]V, next.n)
		for k, v := range next.base {
			merged[k] = v
		}
		for k, o := range next.over {
			if o.gone {
				delete(merged, k)
			} else {
				merged[k] = o.v
			}
		}
		next.base, next.over = merged, nil
	}
	return next
}
