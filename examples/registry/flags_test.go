package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// An operator who gave a bad value is told which flag holds it. Before,
// -addr said only "listening on bogus", -public-url named
// ServerOptions.PublicURL (a Go field the operator never set), -data said
// "creating the data directory" and -pg "opening the PostgreSQL mesh".
// Negative control: with run's flag wrapping removed, every case but
// -metrics-addr (named already) fails.
func TestEveryBadFlagValueIsRefusedNamingItsFlag(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ flag, value string }{
		{"-addr", "bogus"},
		{"-addr", "127.0.0.1:99999"},
		{"-metrics-addr", "bogus"},
		{"-public-url", "notaurl"},
		{"-public-url", "ftp://registry.example.com"},
		{"-data", notDir},
		{"-data", filepath.Join(notDir, "below")},
		{"-pg", "garbage"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), bound)
		err := run(ctx, []string{"-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", c.flag, c.value}, io.Discard, io.Discard, hooks{})
		cancel()
		if assert.Error(t, err, "%s %s", c.flag, c.value) {
			assert.Regexp(t, `(^|[ (])`+c.flag+`[ ):]`, err.Error(), "%s %q", c.flag, c.value)
		}
	}
}
