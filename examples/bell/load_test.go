package main

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWithoutTheLoadRunFlagsTheBellKeepsItsCapsAndDemoUsers: no flag
// gives the caps of defaultLimits (256 streams, 8 per viewer, 512
// connections) and only the demo users; a running bell refuses alice's
// ninth stream, naming those caps. Negative control: the same run with
// -max-streams-per-viewer 9 serves the ninth.
func TestWithoutTheLoadRunFlagsTheBellKeepsItsCapsAndDemoUsers(t *testing.T) {
	cfg, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, defaultLimits(), cfg.load.limits(defaultLimits()))
	assert.Equal(t, limits{streams: 256, streamsPerViewer: 8, recipients: 8, conns: 512,
		headerBytes: defaultLimits().headerBytes, readHeader: defaultLimits().readHeader, read: defaultLimits().read, idle: defaultLimits().idle, write: defaultLimits().write}, cfg.load.limits(defaultLimits()))
	users, admins := cfg.load.generated()
	assert.Empty(t, users)
	assert.Empty(t, admins)
	assert.Empty(t, cfg.load.tokensFile)
	assert.Equal(t, defaultLimits(), (loadConfig{}).limits(defaultLimits()), "a config not made by parseFlags keeps the caps")

	// eight opens alice's eight streams on a run of cfg and returns a client
	// of hers and the run's URL.
	eight := func(cfg config) (*http.Client, string) {
		cfg.addr = "127.0.0.1:0"
		a := startRun(t, cfg)
		assert.ElementsMatch(t, []string{"alice", "bob", "ops"}, keys(a.logins), "only the demo users")
		alice := a.as(t, "alice")
		for range 8 {
			s := openStream(t, alice, a.url+"/events")
			require.Equal(t, http.StatusOK, s.status)
			s.next(t, "hello", func(string) bool { return true })
		}
		return alice, a.url
	}
	alice, base := eight(cfg)
	res, body := do(t, alice, http.MethodGet, base+"/events", nil, nil)
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	assert.Contains(t, body, "at most 256 in all, 8 per viewer")

	raised, err := parseFlags([]string{"-max-streams-per-viewer", "9"}, io.Discard)
	require.NoError(t, err)
	alice, base = eight(raised)
	assert.Equal(t, http.StatusOK, openStream(t, alice, base+"/events").status, "negative control: the raised cap serves the ninth")
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestTheLoadRunFlagsRefuseBadValuesNamingTheFlag: a negative, zero or
// huge value is a clear error naming its flag, and nothing runs. Negative
// controls (run): with the check as users+admins > max, the two 2^63-1
// cases pass validation; without the streams-under-connections check,
// -max-streams 1000 alone passes.
func TestTheLoadRunFlagsRefuseBadValuesNamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-users", "-1"}, "-users and -admins must not be negative"},
		{[]string{"-admins", "-3"}, "-users and -admins must not be negative"},
		{[]string{"-users", "100000", "-admins", "1"}, "-users plus -admins must be at most 100000"},
		// Each alone in range of an int, their sum is not: it wrapped
		// negative, passed, and the bell set out to make 2^63 users.
		{[]string{"-users", "9223372036854775807", "-admins", "1"}, "-users plus -admins must be at most 100000"},
		{[]string{"-users", "1", "-admins", "9223372036854775807"}, "-users plus -admins must be at most 100000"},
		{[]string{"-max-streams", "0"}, "-max-streams must be between 1 and"},
		{[]string{"-max-streams-per-viewer", "-2"}, "-max-streams-per-viewer must be between 1 and"},
		{[]string{"-max-conns", "99999999"}, "-max-conns must be between 1 and"},
		// Streams hold their connections: with as many streams as
		// connections, every slot is a stream's and a new client (a
		// stream past the cap, the page, a send) waits in the backlog for
		// ever instead of being answered, 503 or not.
		{[]string{"-max-streams", "1000"}, "-max-conns (512) must be more than -max-streams (1000)"},
		{[]string{"-max-streams", "600", "-max-conns", "600"}, "-max-conns (600) must be more than -max-streams (600)"},
		{[]string{"-tokens", " t"}, "leading or trailing spaces"},
		{[]string{"-max-conns", "many"}, "invalid value"},
		{[]string{"-pprof", ":6060"}, "-pprof \":6060\": profiles show the server's memory; serve them on a loopback address"},
		{[]string{"-pprof", "0.0.0.0:6060"}, "serve them on a loopback address"},
		{[]string{"-pprof", "localhost"}, "serve them on a loopback address"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		assert.ErrorContains(t, err, tc.want, "%q", tc.args)
	}
	// Control: values in range are accepted.
	cfg, err := parseFlags([]string{"-users", "3", "-admins", "2", "-max-streams", "1000", "-max-streams-per-viewer", "1", "-max-conns", "2000", "-pprof", "127.0.0.1:0"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, limits{streams: 1000, streamsPerViewer: 1, recipients: 8, conns: 2000,
		headerBytes: defaultLimits().headerBytes, readHeader: defaultLimits().readHeader, read: defaultLimits().read, idle: defaultLimits().idle, write: defaultLimits().write}, cfg.load.limits(defaultLimits()))
}

// TestTheTokensFileIsItsOwnersOnlyAndSignsTheGeneratedUsersIn: -users,
// -admins and -tokens write every user's token to a 0600 file (even over
// a file that was world-readable), print links for the demo users only,
// and each token signs its user in; a generated admin, and ops, may send
// to Admin, a generated user may not (403, the negative control).
func TestTheTokensFileIsItsOwnersOnlyAndSignsTheGeneratedUsersIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(path, []byte("stale\n"), 0o644))
	cfg, err := parseFlags([]string{"-addr", "127.0.0.1:0", "-users", "2", "-admins", "1", "-tokens", path}, io.Discard)
	require.NoError(t, err)
	a := startRun(t, cfg)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	assert.ElementsMatch(t, []string{"alice", "bob", "ops"}, keys(a.logins), "the generated users' tokens are in the file only")

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	tokens := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		u, tok, ok := strings.Cut(line, " ")
		require.True(t, ok, "line %q", line)
		tokens[u] = tok
	}
	assert.ElementsMatch(t, []string{"admin00001", "alice", "bob", "ops", "user00001", "user00002"}, keys(tokens))
	assert.Equal(t, a.token(t, "alice"), tokens["alice"], "the file holds the tokens the bell printed")

	as := func(user string) *http.Client {
		return &http.Client{Transport: bearer{token: tokens[user], next: client(t).Transport}, Timeout: bound}
	}
	res, body := do(t, as("user00002"), http.MethodGet, a.url+"/whoami", nil, nil)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, body, `"viewer":"user00002"`)

	adminStream := openStream(t, as("admin00001"), a.url+"/events")
	require.Equal(t, http.StatusOK, adminStream.status)
	status, resp := post(t, as("user00001"), a.url+"/send", url.Values{"to": {"Admin"}, "title": {"from a user"}})
	assert.Equal(t, http.StatusForbidden, status, "negative control: a user does not send to Admin: %v", resp)
	status, resp = post(t, as("admin00001"), a.url+"/send", url.Values{"to": {"Admin"}, "title": {"from an admin"}})
	require.Equal(t, http.StatusOK, status, "%v", resp)
	got := decodeBell(t, adminStream.next(t, "bell", has("from an admin")).data)
	assert.Equal(t, "admin00001", got.find("from an admin").CreatedBy)
	assert.Nil(t, got.find("from a user"), "the refused send wrote nothing")
	status, resp = post(t, a.as(t, "ops"), a.url+"/send", url.Values{"to": {"user00001"}, "title": {"to a generated user"}})
	assert.Equal(t, http.StatusOK, status, "a generated user is a known recipient: %v", resp)
}

// TestARefusedRecipientsErrorNamesAFewUsersNotThousands: with many users
// the 400 for a stranger names ten and counts the rest. Control: with few
// it names them all.
func TestARefusedRecipientsErrorNamesAFewUsersNotThousands(t *testing.T) {
	users, _ := loadConfig{users: 5000}.generated()
	many, err := newAccounts(users)
	require.NoError(t, err)
	assert.Equal(t, "user00001, user00002, user00003, user00004, user00005, user00006, user00007, user00008, user00009, user00010 and 4990 more", many.sample(10))
	few, err := newAccounts(demoUsers)
	require.NoError(t, err)
	assert.Equal(t, "alice, bob, ops", few.sample(10))
}
