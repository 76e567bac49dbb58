package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// snippet matches a README code block announced by a comment naming the
// file that holds the same code: <!-- snippet: path -->.
var snippet = regexp.MustCompile("(?s)<!-- snippet: ([^ ]+) -->\\s*```go\\n(.*?)```")

func TestTheReadmesGoSnippetsAreCodeThatCompilesAndIsTested(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	found := snippet.FindAllSubmatch(readme, -1)
	if len(found) < 3 {
		t.Fatalf("found %d snippets in README.md, want the quick start, its test and the live query", len(found))
	}
	for _, m := range found {
		path, code := string(m[1]), m[2]
		src, err := os.ReadFile(filepath.Join("../..", path))
		if err != nil {
			t.Fatalf("snippet of %s: %v", path, err)
		}
		if !bytes.Contains(src, code) {
			t.Errorf("README.md's snippet is not in %s as written:\n%s", path, code)
		}
	}
}

func TestTheQuickStartPrintsWhatTheReadmeSays(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	out, err := exec.Command("go", "run", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "[4 16 36 64 100] <nil>" {
		t.Fatalf("printed %q", got)
	}
}
