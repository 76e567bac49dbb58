package auth

import (
	"crypto/rand"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeKeyBody is an independent (math/big) reading of a key body, used to
// check the hand-rolled encoder rather than restate it.
func decodeKeyBody(t *testing.T, body string) *big.Int {
	t.Helper()
	n := new(big.Int)
	for _, c := range []byte(body) {
		d := strings.IndexByte(base62Alphabet, c)
		require.GreaterOrEqual(t, d, 0, "digit %q", c)
		n.Mul(n, big.NewInt(62))
		n.Add(n, big.NewInt(int64(d)))
	}
	return n
}

func basic(userAndPassword string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(userAndPassword))
}

func mustKey(t testing.TB) string {
	t.Helper()
	k, err := NewKey()
	require.NoError(t, err)
	return k
}

func TestANewKeyIsThePrefixAndFortyThreeBase62DigitsOfThirtyTwoRandomBytes(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		k := mustKey(t)
		require.True(t, IsWellFormedKey(k), k)
		require.Len(t, k, len(KeyPrefix)+43)
		require.True(t, strings.HasPrefix(k, KeyPrefix))
		require.Less(t, decodeKeyBody(t, k[len(KeyPrefix):]).BitLen(), 257)
		require.False(t, seen[k], "a key repeated")
		seen[k] = true
	}
	// Negative control: the same key with one digit outside the alphabet is
	// not a key, so the check above is not vacuous.
	k := mustKey(t)
	assert.False(t, IsWellFormedKey(k[:10]+"-"+k[11:]))
}

func TestTheKeyEncodingRoundTripsAndKeepsItsLengthAtBothEndsOfTheRange(t *testing.T) {
	var zero, ones [32]byte
	for i := range ones {
		ones[i] = 0xff
	}
	top256 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))

	assert.Equal(t, KeyPrefix+strings.Repeat("0", 43), encodeKey(zero))
	top := encodeKey(ones)
	assert.Len(t, top, len(KeyPrefix)+43)
	assert.Equal(t, 0, decodeKeyBody(t, top[len(KeyPrefix):]).Cmp(top256), "all-ones must encode 2^256-1")
	assert.True(t, IsWellFormedKey(top))

	for range 100 {
		var b [32]byte
		_, _ = rand.Read(b[:])
		k := encodeKey(b)
		got := decodeKeyBody(t, k[len(KeyPrefix):]).FillBytes(make([]byte, 32))
		require.Equal(t, b[:], got)
	}

	// One above 2^256-1 has the right length and alphabet but is not a key.
	above := new(big.Int).Add(top256, big.NewInt(1))
	var digits []byte
	for n := new(big.Int).Set(above); n.Sign() > 0; {
		m := new(big.Int)
		n.DivMod(n, big.NewInt(62), m)
		digits = append([]byte{base62Alphabet[m.Int64()]}, digits...)
	}
	require.Len(t, digits, 43)
	assert.False(t, IsWellFormedKey(KeyPrefix+string(digits)))
}

func TestKeyFromHeaderAcceptsBearerAndBasicWithTheKeyAsPasswordAndNothingElse(t *testing.T) {
	k := mustKey(t)
	// A Basic payload whose header is just over the 512-byte bound.
	longUser := strings.Repeat("u", 340)
	require.Greater(t, len(basic(longUser+":"+k)), 512)
	require.LessOrEqual(t, len(basic(strings.Repeat("u", 300)+":"+k)), 512)

	cases := []struct {
		name   string
		header string
		ok     bool
	}{
		{"bearer", "Bearer " + k, true},
		{"scheme in lower case", "bearer " + k, true},
		{"scheme in upper case", "BEARER " + k, true},
		{"surrounding and repeated space", "  Bearer   " + k + " ", true},
		{"basic with a user", basic("ci:" + k), true},
		{"basic with an empty user", basic(":" + k), true},
		{"basic scheme in lower case", "basic " + base64.StdEncoding.EncodeToString([]byte("x:"+k)), true},
		{"basic without padding", "Basic " + base64.RawStdEncoding.EncodeToString([]byte("ab:"+k)), true},
		{"basic just under the bound", basic(strings.Repeat("u", 300) + ":" + k), true},

		{"missing", "", false},
		{"scheme only", "Bearer", false},
		{"scheme and space", "Bearer ", false},
		{"unknown scheme", "Token " + k, false},
		{"unicode-folded scheme", "Baſic " + base64.StdEncoding.EncodeToString([]byte("x:"+k)), false},
		{"no scheme", k, false},
		{"personal token prefix", "Bearer mw_" + k[len(KeyPrefix):], false},
		{"prefix in another case", "Bearer MWI_" + k[len(KeyPrefix):], false},
		{"one digit short", "Bearer " + k[:len(k)-1], false},
		{"one digit long", "Bearer " + k + "0", false},
		{"url-safe character", "Bearer " + k[:20] + "_" + k[21:], false},
		{"two keys", "Bearer " + k + " " + k, false},
		{"bad base64", "Basic !!!" + k, false},
		{"basic without a colon", basic(k), false},
		{"basic with the key as user", basic(k + ":"), false},
		{"basic with a malformed key", basic("ci:" + k[:30]), false},
		{"over 512 bytes", basic(longUser + ":" + k), false},
		{"over 512 bytes of space around a good key", "Bearer" + strings.Repeat(" ", 460) + k, false},
		{"512 bytes of space around a good key", "Bearer" + strings.Repeat(" ", 512-6-47) + k, true},
		{"huge", "Bearer " + strings.Repeat("a", 1<<16), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := KeyFromHeader(c.header)
			require.Equal(t, c.ok, ok)
			if c.ok {
				assert.Equal(t, k, got)
			} else {
				assert.Empty(t, got)
			}
		})
	}
}

var sink string

func TestKeyFromHeaderDoesNotAllocateUnlessItDecodesAKeyFromBasic(t *testing.T) {
	k := mustKey(t)
	noAlloc := []string{"", "Bearer", "Bearer " + k, "Bearer " + k[:30], "Basic !!!!", basic(k), basic("ci:" + k[:30]), strings.Repeat("x", 600)}
	for _, h := range noAlloc {
		allocs := testing.AllocsPerRun(100, func() { sink, _ = KeyFromHeader(h) })
		assert.Zero(t, allocs, "header %.40q", h)
	}
	valid := basic("ci:" + k)
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { sink, _ = KeyFromHeader(valid) }), 1.0)

	// Negative control: the instrument does see an allocation on this path,
	// e.g. the lower-casing a naive scheme match would do.
	h := "Bearer " + k
	assert.Positive(t, testing.AllocsPerRun(100, func() { sink = strings.ToLower(h) }))
}

func TestHashKeyIsLowerCaseHexSHA256(t *testing.T) {
	// FIPS 180-2 test vector for "abc".
	assert.Equal(t, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", HashKey("abc"))
	a, b := mustKey(t), mustKey(t)
	assert.NotEqual(t, HashKey(a), HashKey(b))
	assert.Equal(t, HashKey(a), HashKey(a))
}

func TestHashPrefixIsTheFirstTwelveHexCharactersAndNeverPanics(t *testing.T) {
	assert.Equal(t, "ba7816bf8f01", HashPrefix(HashKey("abc")))
	assert.Equal(t, "abc", HashPrefix("abc"))
	assert.Equal(t, "", HashPrefix(""))
}

func TestHashesEqualComparesTheWholeHash(t *testing.T) {
	h := HashKey("abc")
	assert.True(t, HashesEqual(h, strings.Clone(h)))
	assert.False(t, HashesEqual(h, h[:63]+"0"), "differs only in the last character")
	assert.False(t, HashesEqual(h, h[:12]), "a prefix is not the hash")
	assert.False(t, HashesEqual(h, ""))
}

func FuzzKeyFromHeader(f *testing.F) {
	k, err := NewKey()
	require.NoError(f, err)
	for _, seed := range []string{
		"", "Bearer " + k, "bearer\t" + k, basic("u:" + k), basic(":" + k),
		"Basic " + base64.RawStdEncoding.EncodeToString([]byte("u:"+k)),
		"Basic =", "Basic ====", "Basic " + k, "Bearer mwi_", "Bearer " + k + "\x00",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		key, ok := KeyFromHeader(header)
		if !ok {
			if key != "" {
				t.Fatalf("not ok but returned %q", key)
			}
			return
		}
		if !IsWellFormedKey(key) {
			t.Fatalf("accepted %q, which fails the format check", key)
		}
		if again, ok := KeyFromHeader("Bearer " + key); !ok || again != key {
			t.Fatalf("%q does not round-trip as a Bearer header", key)
		}
		if again, ok := KeyFromHeader(basic("u:" + key)); !ok || again != key {
			t.Fatalf("%q does not round-trip as a Basic header", key)
		}
	})
}

func BenchmarkKeyFromHeaderMissingOrMalformed(b *testing.B) {
	k, err := NewKey()
	require.NoError(b, err)
	cases := []struct{ name, header string }{
		{"missing", ""},
		{"scheme-only", "Bearer"},
		{"wrong-scheme", "Token " + k},
		{"wrong-prefix", "Bearer mw_" + k[len(KeyPrefix):]},
		{"wrong-length", "Bearer " + k[:40]},
		{"bad-base64", "Basic !!!!" + k},
		{"basic-no-colon", basic(k)},
		{"oversized", strings.Repeat("x", 4096)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink, _ = KeyFromHeader(c.header)
			}
		})
	}
}
