package landing

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
)

// An archive entry whose object key would pass S3's 1,024 bytes (its name
// beneath the prefix and the longest generation directory) is refused as
// an *ArchiveError, by CheckArchive (the publish route's check) and by the
// landing, before anything is written. The archive checks allowed entry
// names of 1,024 bytes: such a module passed the check and failed part way
// through its landing on S3 with the store's KeyTooLongError (a 400 from
// the store, read as the registry's own failure), where a directory
// landed it. Negative control, run by hand: without the volume's limit in
// the landing, CheckArchive passed and Land failed with "KeyTooLongError".
// Control: the same archive lands on a directory, and one whose entry fits
// lands on S3.
func TestAnArchiveEntryTooLongForAnObjectKeyIsRefusedBeforeAnythingIsWritten(t *testing.T) {
	srv := s3test.Start(t)
	v := s3Volume(t, srv, s3volume.Options{Prefix: "registry"})
	l := newLanding(t, v, Options{})
	entry := func(n int) []byte {
		name := strings.Repeat(strings.Repeat("a", 200)+"/", n/201) + strings.Repeat("b", n%201+1)
		return testkit.Zip(t, testkit.Entry{Name: name, Body: []byte("x")})
	}
	long := entry(900)
	var ae *ArchiveError
	require.ErrorAs(t, l.CheckArchive(bytes.NewReader(long), int64(len(long))), &ae)
	assert.Equal(t, ArchiveUnsafePath, ae.Problem)
	_, err := l.Land(t.Context(), "Long", "1.0.0", long)
	require.ErrorAs(t, err, &ae)
	assert.Empty(t, volumeTree(t, v), "nothing written")

	dir := newLanding(t, DirVolume(t.TempDir()), Options{})
	_, err = dir.Land(t.Context(), "Long", "1.0.0", long)
	require.NoError(t, err, "control: a directory holds it")
	fits := entry(600)
	_, err = l.Land(t.Context(), "Long", "1.0.0", fits)
	require.NoError(t, err, "control: an entry that fits lands on S3")
}
