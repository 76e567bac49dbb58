package landing

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecordNamesSortInEventOrder(t *testing.T) {
	// Instants spanning decimal-digit boundaries, in event order.
	instants := []time.Time{
		time.Unix(0, 0), time.Unix(0, 9), time.Unix(0, 10), time.Unix(0, 999_999_999),
		time.Unix(1, 0), time.Unix(9, 0), time.Unix(10, 0), time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC),
		time.Date(2262, 4, 11, 0, 0, 0, 0, time.UTC),
	}
	var stamps, unpadded []string
	for _, at := range instants {
		s := newStamp(at)
		got, ok := parseStamp(s)
		require.True(t, ok, s)
		assert.True(t, got.Equal(at), "a stamp carries its instant")
		stamps = append(stamps, s)
		unpadded = append(unpadded, fmt.Sprintf("%d-%s", at.UnixNano(), s[21:]))
	}
	assert.True(t, slices.IsSorted(stamps), "lexical order is event order: %v", stamps)
	assert.False(t, slices.IsSorted(unpadded), "negative control: the same instants unpadded sort out of order")

	for _, bad := range []string{"", "123", "0000000000000000000a-0123456789abcdef", "00000000000000000001-0123456789ABCDEF",
		"00000000000000000001_0123456789abcdef", "00000000000000000001-0123456789abcdeg"} {
		_, ok := parseStamp(bad)
		assert.False(t, ok, "%q is not a stamp", bad)
	}
}

func TestAnUnreadableRecordIsReportedAndTheOlderOneServes(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		v := k.openVolume(t)
		l := newLanding(t, v, Options{})
		_, err := l.Land(ctx, "Rec", "1.0.0", testkit.ModuleArchive(t, "Rec", "1.0.0", 1))
		require.NoError(t, err)
		latest, err := l.Land(ctx, "Rec", "2.0.0", testkit.ModuleArchive(t, "Rec", "2.0.0", 1))
		require.NoError(t, err)
		act, err := l.Activation(ctx)
		require.NoError(t, err)
		require.Equal(t, "2.0.0", servedVersions(act)["Rec"], "control: the intact latest record serves")
		require.Empty(t, act.Unreadable)

		recordFile := path.Join("modules", "rec", "records", latest.ID+".json")
		for name, content := range map[string]string{
			"garbage":             "{not json",
			"another module":      `{"format":1,"module":"Other","state":"landed","version":"9.9.9"}`,
			"unknown state":       `{"format":1,"module":"Rec","state":"exploded"}`,
			"future format":       `{"format":2,"module":"Rec","state":"uninstalled"}`,
			"served without hash": `{"format":1,"module":"Rec","state":"landed","version":"3.0.0","generation":"00000000000000000001-0123456789abcdef"}`,
		} {
			require.NoError(t, v.WriteFile(ctx, recordFile, []byte(content)))
			act, err := l.Activation(ctx)
			require.NoError(t, err, name)
			assert.Equal(t, "1.0.0", servedVersions(act)["Rec"], "%s: served from the older record", name)
			if assert.Len(t, act.Unreadable, 1, name) {
				assert.Equal(t, "modules/rec/records/"+latest.ID+".json", act.Unreadable[0].Path)
			}
		}

		t.Run("a record larger than MaxRecordBytes is refused", func(t *testing.T) {
			record := func(replica string) []byte {
				return []byte(`{"format":1,"module":"Rec","state":"landed","version":"3.0.0",` +
					`"generation":"00000000000000000001-0123456789abcdef","sha256":"` + strings.Repeat("ab", 32) +
					`","replica":"` + replica + `"}`)
			}
			pad := func(n int) string { return strings.Repeat("r", n-len(record(""))) }
			// Negative control: the same record at exactly the bound is read
			// and serves.
			require.NoError(t, v.WriteFile(ctx, recordFile, record(pad(MaxRecordBytes))))
			act, err := l.Activation(ctx)
			require.NoError(t, err)
			require.Equal(t, "3.0.0", servedVersions(act)["Rec"], "control")
			require.NoError(t, v.WriteFile(ctx, recordFile, record(pad(MaxRecordBytes+1))))
			act, err = l.Activation(ctx)
			require.NoError(t, err)
			assert.Equal(t, "1.0.0", servedVersions(act)["Rec"], "served from the older record")
			if assert.Len(t, act.Unreadable, 1) {
				assert.True(t, IsTooLarge(act.Unreadable[0]), "the volume refuses to read it: %v", act.Unreadable[0])
				assert.ErrorContains(t, act.Unreadable[0], "65536 bytes")
			}
		})

		t.Run("a partial temporary file is not a record", func(t *testing.T) {
			require.NoError(t, v.RemoveAll(ctx, recordFile))
			future := newRecordIDFromStamp(99, newStamp(time.Now().Add(time.Hour)))
			partial := []byte(`{"format":1,"module":"Rec","sta`)
			require.NoError(t, v.WriteFile(ctx, path.Join("modules", "rec", "records", ".tmp-"+future+".json"), partial))
			act, err := l.Activation(ctx)
			require.NoError(t, err)
			assert.Equal(t, "1.0.0", servedVersions(act)["Rec"])
			assert.Empty(t, act.Unreadable, "a writer's temporary file is ignored, not read")

			// Negative control: the same bytes under a record's name are read, and refused.
			require.NoError(t, v.WriteFile(ctx, path.Join("modules", "rec", "records", future+".json"), partial))
			act, err = l.Activation(ctx)
			require.NoError(t, err)
			assert.Len(t, act.Unreadable, 1)
		})
	})
}

// A decoded record costs the garbage collector one object for its strings
// (its state is a constant), not one per field: a snapshot holds 100,000 of
// them. Negative control: the same record as encoding/json decodes it has
// its fields in separate allocations.
func TestADecodedRecordHoldsItsStringsInOneAllocation(t *testing.T) {
	rec := Record{Module: "Alpha", State: Landed, Version: "1.2.3", Generation: "01796105699076575562-4623dc3fd12c24ff",
		SHA256: strings.Repeat("ab", 32), Size: 10, Replica: "replica-a"}
	data, err := encodeRecord(rec)
	require.NoError(t, err)
	id := "01796105699076575563-0123456789abcdef"
	got, err := decodeRecord("alpha", strings.Clone(id), data)
	require.NoError(t, err)
	rec.ID = id
	require.Equal(t, rec, got)
	assert.True(t, oneBlock(got), "the strings follow each other in one allocation")
	assert.Equal(t, unsafe.StringData(string(Landed)), unsafe.StringData(string(got.State)), "the state is the constant")

	var plain recordFormat
	require.NoError(t, json.Unmarshal(data, &plain))
	plain.ID = strings.Clone(id)
	assert.False(t, oneBlock(plain.Record), "negative control: as decoded, a string per field")
}

// oneBlock reports whether r's strings lie back to back in memory.
func oneBlock(r Record) bool {
	fields := []string{r.Module, r.Version, r.Generation, r.SHA256, r.Replica, r.ID}
	for i := 1; i < len(fields); i++ {
		prev := fields[i-1]
		if uintptr(unsafe.Pointer(unsafe.StringData(prev)))+uintptr(len(prev)) != uintptr(unsafe.Pointer(unsafe.StringData(fields[i]))) {
			return false
		}
	}
	return true
}
