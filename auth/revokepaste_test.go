package auth

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RevokeKey trimmed the space around what it was given only when taking
// it for a hash: a key pasted with the newline a key file ends with (the
// demo key file is written so) was not recognised as a key, taken for a
// hash, and not revoked; and the *UnknownKeyError's HashPrefix, "never the
// key", was the key's first 12 characters. Control run: with the
// untrimmed check back, the first RevokeKey fails with an *UnknownKeyError
// whose message holds "mwi_" and 8 characters of the key (lower-cased), the
// key still authenticates, and a mistyped key's first 12 characters are in
// the error.
func TestRevokeKeyTakesAKeyPastedWithItsNewlineAndNeverRepeatsKeyText(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.authenticator(nil)
	authenticated := func(key string) bool { return first(t, a.Authenticate(bearer(key))).Authenticated() }
	require.True(t, authenticated(f.key))

	err := f.reg.RevokeKey(ctx, "acme", f.key+"\n")
	if err != nil {
		assert.NotContains(t, strings.ToLower(err.Error()), strings.ToLower(f.key[:12]), "the error never repeats key text")
	}
	assert.NoError(t, err)
	assert.False(t, authenticated(f.key), "the pasted key is revoked")

	other, err := f.reg.IssueKey(ctx, "acme")
	require.NoError(t, err)
	mistyped := other[:len(other)-1] // one character short: no key, no hash
	err = f.reg.RevokeKey(ctx, "acme", mistyped)
	var unknownKey *UnknownKeyError
	require.ErrorAs(t, err, &unknownKey)
	assert.NotContains(t, strings.ToLower(err.Error()), strings.ToLower(other[:12]), "the error never repeats key text")
	assert.True(t, authenticated(other), "a mistyped key revokes nothing")
}
