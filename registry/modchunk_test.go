package registry

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/registry/landing"
)

// pointerFields lists the fields of t (recursively, by path) whose
// values hold a pointer the collector would scan.
func pointerFields(t reflect.Type, path string) []string {
	switch t.Kind() {
	case reflect.Struct:
		var out []string
		for i := range t.NumField() {
			f := t.Field(i)
			out = append(out, pointerFields(f.Type, path+"."+f.Name)...)
		}
		return out
	case reflect.Array:
		if t.Len() == 0 {
			return nil
		}
		return pointerFields(t.Elem(), path+"[]")
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return nil
	}
	return []string{path + " (" + t.String() + ")"}
}

// The snapshot's records are kept so that the collector's mark does not
// walk them: a packed record holds no pointer, so a chunk's []packedRecord
// is allocated as memory the collector never scans. Controls, in the test:
// a landing.Record (eight pointer words) and a packed record with one
// string beside it are both found to hold pointers.
func TestAPackedRecordHoldsNoPointer(t *testing.T) {
	assert.Empty(t, pointerFields(reflect.TypeFor[packedRecord](), "packedRecord"))
	assert.Empty(t, pointerFields(reflect.TypeFor[packedTime](), "packedTime"))

	assert.NotEmpty(t, pointerFields(reflect.TypeFor[landing.Record](), "Record"), "control: a landing.Record holds pointers")
	type withString struct {
		packedRecord
		name string
	}
	assert.Equal(t, []string{"withString.name (string)"}, pointerFields(reflect.TypeFor[withString](), "withString"),
		"control: one string field is found")
}

// A chunk packs every field of landing.Record: a field added to Record and
// not to the chunk fails here, not silently in a served snapshot. Control:
// the list without one name fails the comparison (seen when the list was
// written without RecordedAt).
func TestAChunkPacksEveryFieldOfARecord(t *testing.T) {
	var names []string
	for f := range reflect.TypeFor[landing.Record]().Fields() {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"Module", "State", "Version", "Generation", "SHA256", "Size", "LandedAt", "RecordedAt", "Replica", "ID"}, names,
		"modChunk packs exactly these fields (newChunk, unpack)")
	strs := 0
	for _, n := range names {
		if f, _ := reflect.TypeFor[landing.Record]().FieldByName(n); f.Type.Kind() == reflect.String {
			strs++
		}
	}
	assert.Equal(t, recordStrings, strs)
}

func randomRecord(rng *rand.Rand, module string) landing.Record {
	str := func() string {
		if rng.IntN(5) == 0 {
			return ""
		}
		var b strings.Builder
		for range 1 + rng.IntN(40) {
			b.WriteRune([]rune("abcXYZ09.-_é世")[rng.IntN(13)])
		}
		return b.String()
	}
	locs := []*time.Location{time.UTC, time.Local, time.FixedZone("X", 3600*rng.IntN(12)), time.FixedZone("", -1800)}
	tm := func() time.Time {
		switch rng.IntN(4) {
		case 0:
			return time.Time{}
		case 1:
			return time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC() // what landing stamps
		default:
			return time.Unix(rng.Int64N(4e9)-2e9, rng.Int64N(1e9)).In(locs[rng.IntN(len(locs))])
		}
	}
	states := []landing.State{landing.Landed, landing.Shelved, landing.Uninstalled, landing.Removed, "", landing.State(str())}
	return landing.Record{
		Module: module, State: states[rng.IntN(len(states))], Version: str(), Generation: str(), SHA256: str(),
		Size: rng.Int64() - rng.Int64(), LandedAt: tm(), RecordedAt: tm(), Replica: str(), ID: str(),
	}
}

// What a chunk gives back is the record it packed, field for field and
// equal by == (times in their location; a monotonic reading is dropped,
// as a record's JSON drops it, and landing's stamps have none): over random
// records with empty and non-ASCII strings, zero times and times in UTC,
// Local and fixed zones. A record's strings are its own (not in the
// arena, which a kept string would keep whole); a peeked one's are in it.
// Control: a time with a monotonic reading comes back Equal, not ==.
func TestAChunkGivesBackTheRecordsItPacked(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 5))
		recs := make([]landing.Record, rng.IntN(600))
		for i := range recs {
			recs[i] = randomRecord(rng, fmt.Sprintf("m%04d", i))
		}
		c := newChunk(recs)
		require.Equal(t, len(recs), c.len())
		arena := uintptr(unsafe.Pointer(unsafe.SliceData(c.arena)))
		inArena := func(s string) bool {
			p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
			return len(s) > 0 && p >= arena && p < arena+uintptr(len(c.arena))
		}
		for i, want := range recs {
			got, peeked := c.record(i), c.peek(i)
			require.True(t, want == got, "seed %d record %d: %+v, packed %+v", seed, i, want, got)
			require.True(t, want == peeked, "seed %d record %d peeked", seed, i)
			require.Equal(t, want.Module, c.module(i))
			for _, s := range []string{got.Module, got.Version, got.SHA256, got.ID} {
				require.False(t, inArena(s), "a record's strings are its own")
			}
			if want.Version != "" {
				require.True(t, inArena(peeked.Version), "a peeked record's strings are in the arena")
			}
		}
	}
	now := time.Now()
	c := newChunk([]landing.Record{{Module: "m", LandedAt: now}})
	got := c.record(0).LandedAt
	assert.True(t, got.Equal(now))
	assert.False(t, got == now, "control: the monotonic reading is not kept")
	assert.True(t, got == now.Round(0))
}

// The list's lookup over packed chunks answers as a binary search of the
// flat records (the representation it replaced) does, for names held, held
// in another case, and not held, over random lists of up to 3,000 modules
// (many chunks).
func TestAPackedListLooksUpAsTheFlatRecordsDo(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var flat []landing.Record
		var queries []string
		for i := range rng.IntN(3000) {
			name := fmt.Sprintf("Mod%05d", i*2)
			if rng.IntN(4) != 0 {
				flat = append(flat, randomRecord(rng, name))
			}
			queries = append(queries, name, strings.ToLower(name), strings.ToUpper(name), fmt.Sprintf("Mod%05d", i*2+1), name+"x")
		}
		slices.SortFunc(flat, func(a, b landing.Record) int { return landing.CompareNames(a.Module, b.Module) })
		list := newModuleList(flat)
		require.Equal(t, flat, list.flat())
		for _, q := range queries {
			var want landing.Record
			i, found := slices.BinarySearchFunc(flat, q, func(r landing.Record, m string) int { return landing.CompareNames(r.Module, m) })
			if found {
				want = flat[i]
			}
			got, ok := list.lookup(q)
			require.Equal(t, found, ok, "seed %d %q", seed, q)
			require.True(t, want == got, "seed %d %q", seed, q)
		}
	}
}
