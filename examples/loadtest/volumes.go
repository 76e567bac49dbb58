package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/registry/landing"
)

// target is a module volume the served mode runs on (-volumes): the
// directory the modules were landed in, behind the simulated -latency, or
// an S3 bucket holding a copy of it, reached over HTTP.
type target struct {
	name string
	v    landing.Volume // nil: the directory, behind newSlowVolume
	stop func()
}

// openTargets opens the -volumes list: "dir", "s3" (an S3-protocol server
// this program starts in process: gofakes3 over net/http on a loopback
// port) or an s3:// URL (landing.OpenS3Volume). An S3 volume gets a copy of
// dir's files under the same names, unless it holds the copy already.
func openTargets(ctx context.Context, list, dir string, modules int) (_ []target, err error) {
	var out []target
	defer func() {
		if err != nil {
			for _, t := range out {
				t.stop()
			}
		}
	}()
	for _, name := range strings.Split(list, ",") {
		switch {
		case name == "dir":
			out = append(out, target{name: "dir", stop: func() {}})
		case name == "s3":
			srv, err := s3test.New("meshrx-loadtest")
			if err != nil {
				return nil, err
			}
			v, err := s3volume.New(s3volume.Options{Client: srv.Client(), Bucket: srv.Bucket, Prefix: "loadtest"})
			if err != nil {
				srv.Close()
				return nil, err
			}
			out = append(out, target{name: "s3", v: v, stop: srv.Close})
		case strings.HasPrefix(name, "s3://"):
			v, err := s3volume.Open(ctx, name, s3volume.Options{})
			if err != nil {
				return nil, err
			}
			out = append(out, target{name: "s3", v: v, stop: func() { _ = v.Close() }})
		default:
			return nil, fmt.Errorf("-volumes: %q is not dir, s3 or an s3:// URL", name)
		}
		if t := out[len(out)-1]; t.v != nil {
			if err := copyVolume(ctx, dir, t.v, modules); err != nil {
				return nil, fmt.Errorf("copying the modules to %s: %w", name, err)
			}
		}
	}
	return out, nil
}

// serveS3 serves the test S3 server (-s3-server) until ctx ends, so that
// a load run can reach it in another process (-volumes dir,s3://…) and the
// server's CPU is not counted in the registry's process. It prints the
// -volumes URL and the environment the other process needs.
func serveS3(ctx context.Context, stdout io.Writer) error {
	srv, err := s3test.New("meshrx-loadtest")
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(stdout, "s3 server: -volumes 'dir,%s' with %s\n", srv.VolumeURL("loadtest"), strings.Join(s3test.Env(), " "))
	<-ctx.Done() // until interrupted: the program's lifetime
	return nil
}

// copyMarker names the object that says a bucket holds the copy of -modules.
const copyMarker = "loadtest-modules"

// copyVolume puts every file under dir on v under its relative name,
// 16 at a time: the volume's layout is the same on a directory and on
// object storage.
func copyVolume(ctx context.Context, dir string, v landing.Volume, modules int) error {
	if got, err := v.ReadFile(ctx, copyMarker, 64); err == nil && strings.TrimSpace(string(got)) == strconv.Itoa(modules) {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == copyMarker {
			return err
		}
		g.Go(func() error {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return writeFrom(gctx, v, filepath.ToSlash(rel), f)
		})
		return gctx.Err()
	})
	if err := errors.Join(err, g.Wait()); err != nil {
		return err
	}
	return v.WriteFile(ctx, copyMarker, []byte(strconv.Itoa(modules)))
}

func writeFrom(ctx context.Context, v landing.Volume, name string, r io.Reader) error {
	if sv, ok := v.(landing.StreamingVolume); ok {
		return sv.WriteFrom(ctx, name, r)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return v.WriteFile(ctx, name, data)
}

// keepExclusive returns wrapper, a wrapper around inner, with inner's
// CreateExclusive when inner has one: a landing on object storage claims
// and commits with it (a wrapper hiding it would make the landing fail).
func keepExclusive(wrapper, inner landing.Volume) landing.Volume {
	if x, ok := inner.(landing.ExclusiveVolume); ok {
		return exclusive{Volume: wrapper, x: x}
	}
	return wrapper
}

type exclusive struct {
	landing.Volume
	x landing.ExclusiveVolume
}

func (e exclusive) CreateExclusive(ctx context.Context, name string, data []byte) error {
	return e.x.CreateExclusive(ctx, name, data)
}

func (e exclusive) WriteFrom(ctx context.Context, name string, r io.Reader) error {
	return writeFrom(ctx, e.Volume, name, r)
}
