package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"github.com/meshrx/meshrx/mesh"
)

// KeyPrefix starts every instance key, so a key found in a log or a config
// file is recognisable as an instance credential.
const KeyPrefix = "mwi_"

const (
	// keyEntropyBytes is the number of random bytes behind every key.
	keyEntropyBytes = 32
	// keyBodyLen is the number of base62 digits needed for 256 bits
	// (256 / log2(62) = 42.99); shorter values are left-padded with '0' so
	// every key has the same length.
	keyBodyLen = 43
	keyLen     = len(KeyPrefix) + keyBodyLen
	// maxKeyBody is 2^256-1 in base62. The alphabet is in ASCII order, so
	// for equal-length bodies string order is numeric order, and a body
	// above this one does not encode 32 bytes.
	maxKeyBody = "yhjskwdA6OZ1AL1YmHWZWm8LLG7HjnuCA2j5rOw8Xp1"
	// maxHeaderLen bounds the work done on an unauthenticated header. A real
	// credential (a user name plus a 47-byte key, base64-encoded) is far
	// below it.
	maxHeaderLen = 512
	// hashPrefixLen is the length of the index node id taken from a hash.
	hashPrefixLen = 12

	base62Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// NewKey mints a fresh instance key from 32 bytes of crypto/rand. The raw key
// is shown to its owner once; only [HashKey] of it is stored.
func NewKey() (string, error) {
	var b [keyEntropyBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("auth: reading randomness for an instance key: %w", err)
	}
	return encodeKey(b), nil
}

// encodeKey renders 32 bytes as KeyPrefix plus exactly 43 base62 digits.
func encodeKey(b [keyEntropyBytes]byte) string {
	var out [keyLen]byte
	copy(out[:], KeyPrefix)
	num := b
	for i := keyLen - 1; i >= len(KeyPrefix); i-- {
		// Long division of the big-endian number by 62; the remainder is
		// the next digit from the right.
		var rem uint
		for j := range num {
			cur := rem<<8 | uint(num[j])
			num[j] = byte(cur / 62)
			rem = cur % 62
		}
		out[i] = base62Alphabet[rem]
	}
	return string(out[:])
}

// IsWellFormedKey reports whether key has the exact shape of an instance key:
// the prefix, 43 base62 digits, and a value that fits in 32 bytes. It says
// nothing about whether the key is registered.
func IsWellFormedKey(key string) bool { return wellFormedKey(key) }

func wellFormedKey[T string | []byte](key T) bool {
	if len(key) != keyLen || string(key[:len(KeyPrefix)]) != KeyPrefix {
		return false
	}
	body := key[len(KeyPrefix):]
	for i := 0; i < len(body); i++ {
		if !isBase62(body[i]) {
			return false
		}
	}
	return string(body) <= maxKeyBody
}

func isBase62(c byte) bool {
	return '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z'
}

// HashKey returns the lower-case hex SHA-256 of a raw key: the only form in
// which a key is stored or compared.
func HashKey(key string) string {
	digest := keyDigest(key)
	return hexDigest(&digest)
}

// keyDigest is the SHA-256 of a raw key: on every authenticated request, a
// key of up to 128 bytes is hashed from the stack.
func keyDigest(key string) [sha256.Size]byte {
	var in [128]byte
	return sha256.Sum256(append(in[:0], key...))
}

// hexDigest is HashKey's form of a digest; the string is its one allocation.
func hexDigest(digest *[sha256.Size]byte) string {
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], digest[:])
	return string(out[:])
}

// HashPrefix returns the first 12 characters of a key hash, the id of the
// index node that leads from a presented key to its instance. A value shorter
// than that is returned whole.
func HashPrefix(hash string) string {
	if len(hash) < hashPrefixLen {
		return hash
	}
	return hash[:hashPrefixLen]
}

// HashesEqual compares two key hashes in constant time, so a mismatch does
// not reveal how much of a hash matched.
func HashesEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// KeyFromHeader extracts an instance key from an Authorization header value:
// "Bearer mwi_…" or "Basic base64(user:mwi_…)", where the password is the key
// and the user name is ignored. Schemes are matched in any ASCII case
// (mesh.EqualNames: "Baſic" is no scheme).
//
// It reports ok=false for anything else: a missing header, one over 512
// bytes, an unknown scheme, bad base64, a Basic payload without a colon, or a
// key of the wrong prefix, alphabet or length. It never panics and does not
// allocate unless it returns a key decoded from Basic, because it runs on
// every unauthenticated request.
func KeyFromHeader(header string) (key string, ok bool) {
	if len(header) == 0 || len(header) > maxHeaderLen {
		return "", false
	}
	scheme, rest, found := cutSpace(trimSpace(header))
	if !found {
		return "", false
	}
	rest = trimSpace(rest)
	switch {
	case mesh.EqualNames(scheme, "Bearer"):
		if wellFormedKey(rest) {
			return rest, true
		}
		return "", false
	case mesh.EqualNames(scheme, "Basic"):
		return keyFromBasic(rest)
	default:
		return "", false
	}
}

func keyFromBasic(payload string) (string, bool) {
	if len(payload) == 0 {
		return "", false
	}
	// Copy into fixed arrays so decoding stays on the stack: the header is
	// already bounded by maxHeaderLen.
	var src [maxHeaderLen]byte
	var dst [maxHeaderLen / 4 * 3]byte
	n := copy(src[:], payload)
	enc := base64.StdEncoding
	if n%4 != 0 {
		enc = base64.RawStdEncoding // tolerate a client that drops the padding
	}
	written, err := enc.Decode(dst[:], src[:n])
	if err != nil {
		return "", false
	}
	decoded := dst[:written]
	colon := bytes.IndexByte(decoded, ':')
	if colon < 0 {
		return "", false
	}
	password := bytes.Trim(decoded[colon+1:], " \t")
	if !wellFormedKey(password) {
		return "", false
	}
	return string(password), true
}

// cutSpace splits s at its first space or tab.
func cutSpace(s string) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\t' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// trimSpace trims the optional whitespace HTTP allows around a field value.
func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
