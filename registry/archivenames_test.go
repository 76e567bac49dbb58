package registry

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// TestArchiveEntriesThatACaseInsensitiveVolumeTakesForOneAreRefusedWhateverTheirFold
// publishes archives whose two entries differ only by a Unicode case fold
// that strings.ToLower does not perform (the old duplicate rule's: 'ſ'
// lowers to itself), and by the folds it did (Kelvin sign, ASCII): each is a 400
// naming the duplicate, and nothing lands. Negative control: the old rule's
// keys differ for these pairs (shown below), and entries that differ in
// more than case publish.
func TestArchiveEntriesThatACaseInsensitiveVolumeTakesForOneAreRefusedWhateverTheirFold(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	for _, pair := range [][2]string{{"S.txt", "ſ.txt"}, {"lib/s.txt", "lib/ſ.txt"}, {"ſ/a.txt", "S/a.txt"}, {"K.txt", "\u212A.txt"}, {"readme.TXT", "readme.txt"}} {
		if strings.ContainsRune(pair[0]+pair[1], 'ſ') {
			assert.NotEqual(t, strings.ToLower(pair[0]), strings.ToLower(pair[1]), "control: the old rule told %q and %q apart", pair[0], pair[1])
		}
		archive := testkit.Zip(t, testkit.Entry{Name: pair[0], Body: []byte("a")}, testkit.Entry{Name: pair[1], Body: []byte("b")})
		got := f.do(publishRequest("Acme.Dup", "?version=1.0.0", testPublishToken, archive))
		assert.Equal(t, http.StatusBadRequest, got.status, "%q + %q: %s", pair[0], pair[1], got.body)
		assert.Contains(t, string(got.body), "already names this path", "%q + %q", pair[0], pair[1])
	}
	assert.Empty(t, f.activation())

	ok := testkit.Zip(t, testkit.Entry{Name: "S.txt", Body: []byte("a")}, testkit.Entry{Name: "T.txt", Body: []byte("b")}, testkit.Entry{Name: "é.txt", Body: []byte("c")})
	got := f.do(publishRequest("Acme.Dup", "?version=1.0.0", testPublishToken, ok))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
}

// TestArchiveEntryNamesWithControlsBidiOverridesOrWindowsDevicesAreRefused:
// C1 controls, bidi overrides and other invisible formatting characters,
// and Windows device names (with superscript digits, CONIN$, CONOUT$, a
// trailing space before the extension) are each a 400 that lands nothing.
// Negative control: names that only resemble them publish.
func TestArchiveEntryNamesWithControlsBidiOverridesOrWindowsDevicesAreRefused(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	for _, name := range []string{
		"a\u0085b.txt", "lib/next\u0085line", "evil\u202Etxt.exe", "x\u2066y.txt", "zero\u200Bwidth.txt", "bom\uFEFF.txt",
		"COM¹.txt", "com²", "LPT³.log", "lib/CONIN$", "conout$.txt", "CON .txt", "dir/nul.tar.gz", "COM0", "lpt9.x",
	} {
		archive := testkit.Zip(t, testkit.Entry{Name: name, Body: []byte("x")})
		got := f.do(publishRequest("Acme.Names", "?version=1.0.0", testPublishToken, archive))
		assert.Equal(t, http.StatusBadRequest, got.status, "%q: %s", name, got.body)
	}
	assert.Empty(t, f.activation())

	var fine []testkit.Entry
	for _, name := range []string{"COM10.txt", "CONINX.txt", "console.txt", "lpt.txt", "com¹x.txt", "naïve.txt", "日本.txt"} {
		fine = append(fine, testkit.Entry{Name: name, Body: []byte("x")})
	}
	got := f.do(publishRequest("Acme.Names", "?version=1.0.0", testPublishToken, testkit.Zip(t, fine...)))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
}
