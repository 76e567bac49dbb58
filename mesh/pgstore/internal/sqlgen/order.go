package sqlgen

import (
	"strings"

	"github.com/meshrx/meshrx/mesh"
)

// byPath is mesh's final tie-break: paths compared as bytes, ascending.
const byPath = `path COLLATE "C"`

// order returns the ORDER BY list that sorts rows as q.Less does, naming
// unqualified columns so that it fits a single table and the combined
// fan-out alike. ok is false when the order cannot be reproduced in SQL.
//
// mesh sorts by the sort field's first value typed as number, time or
// string (numbers first, then times, then lower-cased strings; descending
// reverses all of it), nodes without the field last, then by path. Only
// fields whose typing is known without looking at the row are pushed down.
func (b *builder) order(q *mesh.Query) (clause string, ok bool) {
	dir := " ASC"
	if q.Sort.Desc {
		dir = " DESC"
	}
	switch f := q.Sort.Field; {
	case f == "" || neverPresent(f):
		return byPath, true
	case f == "version":
		return "version" + dir + ", " + byPath, true
	case f == "state":
		ranks := stateRanks()
		if len(ranks) == 0 {
			return "", false
		}
		return "(" + b.param(ranks, "int4[]") + ")[state + 1]" + dir + ", " + byPath, true
	case f == "lastModified":
		// Times (years 0000-9999) are one kind and the rest Go's text, a
		// later kind; within each, by instant or by lower-cased text.
		in := b.timeRange("last_modified")
		return "CASE WHEN " + in + " THEN 0 ELSE 1 END" + dir +
			", CASE WHEN " + in + " THEN last_modified END" + dir +
			", CASE WHEN NOT " + in + " THEN " + lowerGoTimeText("last_modified") + ` COLLATE "C" END` + dir +
			", " + byPath, true
	}
	return "", false
}

// neverPresent reports whether mesh reads no value for field on any node
// (it is neither a node field nor a content property); sorting by it is
// sorting by path.
func neverPresent(field string) bool {
	switch field {
	case "id", "namespace", "path", "name", "nodeType", "mainNode", "state", "version", "lastModified", "content":
		return false
	}
	return !strings.HasPrefix(field, "content.")
}

// stateRanks returns, indexed by state value, each named state's place in
// mesh's ascending order by state, found by asking mesh's own Less.
func stateRanks() []int32 {
	states := namedStates()
	if len(states) == 0 {
		return nil
	}
	byState := &mesh.Query{Sort: mesh.Sort{Field: "state"}}
	ranks := make([]int32, int(states[len(states)-1])+1)
	for _, s := range states {
		for _, t := range states {
			if byState.Less(stateNode(t), stateNode(s)) {
				ranks[s]++
			}
		}
	}
	return ranks
}
