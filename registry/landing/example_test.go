package landing_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/meshrx/meshrx/registry/landing"
)

// Example lands a module version on a directory and reads the activation
// list back.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "landing-example")
	defer os.RemoveAll(dir)
	l, err := landing.NewModuleLanding(landing.DirVolume(dir), landing.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Shutdown(ctx)

	var archive bytes.Buffer
	zw := zip.NewWriter(&archive)
	w, _ := zw.Create("hello.txt")
	_, _ = w.Write([]byte("hello"))
	_ = zw.Close()
	if _, err := l.Land(ctx, "Demo.Hello", "1.0.0", archive.Bytes()); err != nil {
		fmt.Println(err)
		return
	}
	act, err := l.Activation(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range act.Modules {
		fmt.Println(r.Module, r.Version, r.State)
	}
	// Output: Demo.Hello 1.0.0 landed
}
