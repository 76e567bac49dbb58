package main

import (
	"testing"
	"testing/cryptotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A user named twice to newAccounts keeps the token issued last, the one
// printed and written to -tokens, and only it signs in: the token it
// replaced, which no one was given, must not. The same random stream
// issues the replaced token first both times, so the test knows it.
// Negative control (run): with the digests made as each token was issued
// (9ae0101), the replaced token's stayed among them and signed in as
// alice, and this failed.
func TestATokenReplacedWhenIssuedDoesNotSignIn(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 25)
	once, err := newAccounts([]string{"alice"})
	require.NoError(t, err)
	replaced := once.tokens["alice"]
	cryptotest.SetGlobalRandom(t, 25)
	twice, err := newAccounts([]string{"alice", "alice"})
	require.NoError(t, err)
	require.Equal(t, once.key, twice.key, "the same random stream: the first token issued is the same")
	require.NotEqual(t, replaced, twice.tokens["alice"])

	u, ok := twice.byToken(twice.tokens["alice"])
	assert.True(t, ok, "the token held signs in")
	assert.Equal(t, "alice", u)
	u, ok = twice.byToken(replaced)
	assert.False(t, ok, "the replaced token signed in as %q", u)
}
