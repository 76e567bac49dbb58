package indexdigest

import (
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/require"
)

// A publisher who chooses an entry's fields cannot make it stand for an
// inner node of another index, nor for a chunk of its own neighbours: the
// one-entry index whose plugin field is the bytes a two-entry index's top
// chunk hashes has another root, and so does an entry whose fields are
// another index's leaves cut elsewhere. Control: a careless digest (no
// leaf or chunk tag, no lengths, no count) gives the forged one-entry index
// the two-entry index's root.
func TestAnEntryCannotStandForAnInnerNodeOrForOtherEntries(t *testing.T) {
	a, b := Leaf("A", "1", "/a", "s"), Leaf("B", "1", "/b", "s")
	two := Root([][32]byte{a, b})
	forged := string(append(append([]byte{0x01}, a[:]...), b[:]...)) // what the top chunk hashes
	require.NotEqual(t, two, Root([][32]byte{Leaf(forged, "", "", "")}), "an entry standing for the top chunk")
	require.NotEqual(t, two, Root([][32]byte{Leaf(string(a[:])+string(b[:]), "", "", "")}))
	require.NotEqual(t, Leaf("A1", "", "/a", "s"), Leaf("A", "1", "/a", "s"), "a byte moved across a field boundary")

	// Control: without tags, lengths and the count, the forgery works.
	carelessLeaf := func(fields ...string) [32]byte {
		h := sha256.New()
		for _, f := range fields {
			h.Write([]byte(f))
		}
		var s [32]byte
		h.Sum(s[:0])
		return s
	}
	carelessRoot := func(ls [][32]byte) [32]byte { // one chunk: enough for two leaves
		if len(ls) == 1 {
			return ls[0]
		}
		h := sha256.New()
		for _, l := range ls {
			h.Write(l[:])
		}
		var s [32]byte
		h.Sum(s[:0])
		return s
	}
	ca, cb := carelessLeaf("A", "1", "/a", "s"), carelessLeaf("B", "1", "/b", "s")
	require.Equal(t, carelessRoot([][32]byte{ca, cb}), carelessRoot([][32]byte{carelessLeaf(string(ca[:]) + string(cb[:]))}),
		"control: the careless digest gives the forged one-entry index the two-entry root")
}
