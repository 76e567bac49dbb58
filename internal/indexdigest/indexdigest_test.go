package indexdigest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func leaves(names []string, version map[string]int) [][32]byte {
	out := make([][32]byte, len(names))
	for i, n := range names {
		out[i] = Leaf(n, fmt.Sprint(version[n]), "/api/plugins/bundles/"+n, "ab")
	}
	return out
}

// TestAnUpdatedTreeHasTheRootOfOneBuiltFromScratch edits a 5,000-entry list
// at random (changes, insertions, removals, runs of them, at either end) and
// checks after every step that the tree rebuilt from the previous one has
// the root of a tree built from nothing. Control: reusing every chunk that
// starts at the same element regardless of the clean flags (clean always
// true) gives another root within the first steps.
func TestAnUpdatedTreeHasTheRootOfOneBuiltFromScratch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := make([]string, 0, 6000)
	version := map[string]int{}
	for i := range 5000 {
		names = append(names, fmt.Sprintf("m%06d", i*2))
	}
	cur := leaves(names, version)
	tree := Build(nil, cur, nil)
	careless := tree
	diverged := false
	for step := range 60 {
		changed := map[string]bool{}
		afterRemoval := map[string]bool{}
		next := names[:0:0]
		for i := 0; i < len(names); i++ {
			n := names[i]
			switch r := rng.IntN(1000); {
			case r < 3: // removed, with a run after it
				run := rng.IntN(3)
				i += run
				if i+1 < len(names) {
					afterRemoval[names[i+1]] = true
				}
				continue
			case r < 6:
				version[n]++
				changed[n] = true
			case r < 9:
				ins := n + "x"
				next = append(next, ins)
				changed[ins] = true
			}
			next = append(next, n)
		}
		if step%7 == 0 && len(next) > 0 { // an edit at either end
			version[next[0]]++
			changed[next[0]] = true
			next = next[:len(next)-1]
		}
		names = next
		cur = leaves(names, version)
		clean := func(i int) bool { return !changed[names[i]] && !afterRemoval[names[i]] }
		tree = Build(tree, cur, clean)
		require.Equal(t, Root(cur), tree.Root(), "step %d", step)
		careless = Build(careless, cur, func(int) bool { return true })
		if careless.Root() != tree.Root() {
			diverged = true
		}
	}
	require.True(t, diverged, "control: ignoring the clean flags must give a wrong root")
}

// TestTheRootNamesTheEntriesAndTheirCount: an empty index, one entry, and
// the same leaves in another order or with one more all have other roots.
func TestTheRootNamesTheEntriesAndTheirCount(t *testing.T) {
	a, b := Leaf("A", "1", "u", "s"), Leaf("B", "1", "u", "s")
	roots := map[[32]byte]string{}
	for name, ls := range map[string][][32]byte{
		"empty": nil, "a": {a}, "b": {b}, "ab": {a, b}, "ba": {b, a}, "aab": {a, a, b},
	} {
		r := Root(ls)
		require.NotContains(t, roots, r, "%s has the root of %s", name, roots[r])
		roots[r] = name
	}
	// Field boundaries are length-prefixed: moving a byte between fields
	// is another leaf.
	require.NotEqual(t, Leaf("ab", "c", "u", "s"), Leaf("a", "bc", "u", "s"))
}

// TestTheRootFromChunkHashesIsTheRootOfTheLeaves: whoever keeps the leaves
// cut into level-0 chunks (the server keeps the index body so) gets the
// root of the whole tree from the chunks' hashes, for every size from an
// empty index up. Control: chunks cut without EndsChunk's two-element
// minimum give another root at some size.
func TestTheRootFromChunkHashesIsTheRootOfTheLeaves(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	cutHashes := func(ls [][32]byte, ends func([32]byte, int) bool) [][32]byte {
		if len(ls) == 1 {
			return [][32]byte{ls[0]}
		}
		var out [][32]byte
		start := 0
		for i := range ls {
			if i == len(ls)-1 || ends(ls[i], i-start+1) {
				out = append(out, ChunkHash(ls[start:i+1]))
				start = i + 1
			}
		}
		return out
	}
	careless := func(last [32]byte, _ int) bool { return last[0]%Fanout == 0 }
	diverged := false
	for _, n := range []int{0, 1, 2, 3, 63, 64, 65, 200, 1000, 4097, 9000} {
		ls := make([][32]byte, n)
		for i := range ls {
			ls[i] = Leaf(fmt.Sprintf("m%06d", rng.IntN(1_000_000)), "1", "u", "s")
		}
		require.Equal(t, Root(ls), RootOfChunks(n, cutHashes(ls, EndsChunk)), "%d leaves", n)
		diverged = diverged || Root(ls) != RootOfChunks(n, cutHashes(ls, careless))
	}
	require.True(t, diverged, "negative control: another cut gives another root")
}
