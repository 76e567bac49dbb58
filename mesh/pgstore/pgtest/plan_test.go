package pgtest

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheEnvironmentDecidesWhetherTestsUseASkipOrFailWithoutAServer(t *testing.T) {
	found := Binaries{Initdb: "/pg/bin/initdb", PgCtl: "/pg/bin/pg_ctl", Postgres: "/pg/bin/postgres"}
	notFound := &NotFoundError{Searched: []string{"/usr/bin"}}
	const url = "postgres://ci@db:5432/postgres"

	cases := []struct {
		name       string
		env        map[string]string
		bins       Binaries
		findErr    error
		want       Mode
		wantReason []string // substrings the reason must contain
	}{
		{name: "a URL is used even when programs are installed", env: map[string]string{EnvURL: url}, bins: found, want: ModeExternal},
		{name: "a URL satisfies a requirement without programs", env: map[string]string{EnvURL: url, EnvRequire: "1"}, findErr: notFound, want: ModeExternal},
		{name: "installed programs start a local server", bins: found, want: ModeLocal},
		{name: "installed programs satisfy a requirement", env: map[string]string{EnvRequire: "1"}, bins: found, want: ModeLocal},
		{name: "nothing available skips and says how to install", findErr: notFound, want: ModeSkip,
			wantReason: []string{"apt-get install -y postgresql", EnvRequire}},
		{name: "an explicit 0 still skips", env: map[string]string{EnvRequire: "0"}, findErr: notFound, want: ModeSkip},
		{name: "false still skips", env: map[string]string{EnvRequire: "false"}, findErr: notFound, want: ModeSkip},
		{name: "required and nothing available fails and says how to install", env: map[string]string{EnvRequire: "1"}, findErr: notFound, want: ModeFail,
			wantReason: []string{"apt-get install -y postgresql", EnvRequire + "=1"}},
		{name: "true also requires", env: map[string]string{EnvRequire: "true"}, findErr: notFound, want: ModeFail},
		{name: "a misspelt requirement fails instead of meaning off", env: map[string]string{EnvRequire: "yes"}, findErr: notFound, want: ModeFail,
			wantReason: []string{EnvRequire, `"yes"`}},
		{name: "a misspelt requirement fails even when a server is available", env: map[string]string{EnvRequire: "on!", EnvURL: url}, bins: found, want: ModeFail,
			wantReason: []string{`"on!"`}},
		{name: "a discovery fault is not absence", findErr: &fs.PathError{Op: "stat", Path: "/usr/lib/postgresql", Err: errors.New("I/O error")}, want: ModeFail,
			wantReason: []string{"I/O error"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			p := Decide(getenv, tc.bins, tc.findErr)
			require.Equal(t, tc.want, p.Mode, "reason: %s", p.Reason)
			for _, s := range tc.wantReason {
				assert.Contains(t, p.Reason, s)
			}
			switch p.Mode {
			case ModeExternal:
				assert.Equal(t, url, p.URL)
			case ModeLocal:
				assert.Equal(t, found, p.Binaries)
			default:
				assert.NotEmpty(t, p.Reason, "a skip or failure must say why")
			}
		})
	}
}
