package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meshrx/meshrx/auth"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/landing"
)

// demoInstance is the id of the instance the demo registers.
const demoInstance = "demo"

// demoPackage is one bundle the demo lands.
type demoPackage struct {
	name, version, tier string
}

// demoPackages are landed at start: one at the baseline, one on the free
// plan, one on the pro plan.
func demoPackages() []demoPackage {
	return []demoPackage{
		{name: "Demo.Hello", version: "1.0.0"},
		{name: "Demo.Charts", version: "2.1.0", tier: "free"},
		{name: "Demo.Reports", version: "0.9.0", tier: "pro"},
	}
}

// setUpDemo writes the plan ladder (free, pro), lands the demo bundles with
// their package nodes (skipping a version already served, as on a restart
// with -data), registers the demo instance on the pro plan granted
// Plugins/*, and returns its key: the one kept in keyFile while the
// database still holds it, so that a restart, or another replica on the
// same database and data directory, prints the key clients already use.
// A key is issued (replacing the instance's others) only when there is
// none that works, or when rotate is set (-rotate-demo-key).
func setUpDemo(ctx context.Context, store mesh.Store, landing *landing.ModuleLanding, served *registry.ServedActivation, keyFile keyKeeper, rotate bool) (string, error) {
	reg := &auth.Instances{Mesh: store}
	for _, t := range []auth.PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 1}} {
		if err := reg.SetPlanTier(ctx, t); err != nil {
			return "", err
		}
	}
	act, err := landing.Activation(ctx)
	if err != nil {
		return "", err
	}
	for _, p := range demoPackages() {
		// The package node first: a bundle is served only once its tier is known.
		content, err := json.Marshal(registry.PackageContent{Tier: p.tier})
		if err != nil {
			return "", err
		}
		node := mesh.Node{Path: registry.DefaultSource + "/" + p.name, NodeType: registry.PackageNodeType, Name: p.name, Content: content}
		if _, err := store.Put(ctx, node); err != nil {
			return "", err
		}
		if rec, ok := act.Lookup(p.name); !ok || rec.Version != p.version {
			archive, err := demoBundle(p)
			if err != nil {
				return "", err
			}
			if _, err := served.Land(ctx, p.name, p.version, archive); err != nil {
				return "", err
			}
		}
	}
	var exists *auth.InstanceExistsError
	if _, err := reg.Register(ctx, demoInstance, "Demo instance", "pro"); err != nil && !errors.As(err, &exists) {
		return "", err
	}
	if _, err := reg.SetGrant(ctx, demoInstance, "examples/registry", registry.DefaultSource+"/*"); err != nil {
		return "", err
	}
	return demoKey(ctx, reg, keyFile, rotate)
}

// demoKeyAttempts bounds how often a start issues a key because the one kept
// stopped working meanwhile (two first starts at once each issuing one).
const demoKeyAttempts = 3

// demoKey returns the demo instance's key kept in keyFile if the database
// holds it (and rotate is not set), else issues one, replacing the
// instance's others, and keeps it in keyFile (mode 0600, written whole and
// renamed into place). It then reads the file back: when another start
// issued a key meanwhile, the one that works is the one printed.
func demoKey(ctx context.Context, reg *auth.Instances, keyFile keyKeeper, rotate bool) (string, error) {
	for range demoKeyAttempts {
		if !rotate {
			key, ok, err := keptKey(ctx, reg, keyFile)
			if err != nil || ok {
				return key, err
			}
		}
		rotate = false
		key, err := reg.RotateKey(ctx, demoInstance)
		if err != nil {
			return "", err
		}
		if err := keyFile.write(ctx, key); err != nil {
			return "", fmt.Errorf("keeping the demo key in %s: %w", keyFile, err)
		}
	}
	key, ok, err := keptKey(ctx, reg, keyFile)
	if err == nil && !ok {
		err = fmt.Errorf("the demo key in %s was replaced %d times while this start issued one (other starts on this database?); start again", keyFile, demoKeyAttempts)
	}
	return key, err
}

// keptKey reads the key in keyFile; ok when the demo instance holds it.
func keptKey(ctx context.Context, reg *auth.Instances, keyFile keyKeeper) (key string, ok bool, err error) {
	data, err := keyFile.read(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading the demo key: %w", err)
	}
	key = strings.TrimSpace(string(data))
	inst, err := reg.Instance(ctx, demoInstance)
	if err != nil {
		return "", false, err
	}
	return key, slices.Contains(inst.KeyHashes, auth.HashKey(key)), nil
}

// keyKeeper keeps the demo key: a file in the data directory, or an
// object on the module volume when that is shared object storage (replicas
// on other machines have no data directory in common).
type keyKeeper interface {
	read(ctx context.Context) ([]byte, error) // an error wrapping fs.ErrNotExist when none is kept
	write(ctx context.Context, key string) error
}

// keyFile keeps the key in a file (mode 0600).
type keyFile string

func (f keyFile) read(context.Context) ([]byte, error)      { return os.ReadFile(string(f)) }
func (f keyFile) write(_ context.Context, key string) error { return writeKeyFile(string(f), key) }
func (f keyFile) String() string                            { return string(f) }

// maxKeyFile bounds the read of a kept key: a key is a line of a few
// dozen characters.
const maxKeyFile = 1 << 10

// volumeKey keeps the key in the object name on a module volume: written
// whole by one PUT, read back like the file.
type volumeKey struct {
	v    landing.Volume
	name string
}

func (k volumeKey) read(ctx context.Context) ([]byte, error) {
	return k.v.ReadFile(ctx, k.name, maxKeyFile)
}
func (k volumeKey) write(ctx context.Context, key string) error {
	return k.v.WriteFile(ctx, k.name, []byte(key+"\n"))
}
func (k volumeKey) String() string { return fmt.Sprintf("%v/%s", k.v, k.name) }

// writeKeyFile writes key to name with mode 0600, whole: through a
// temporary file renamed into place.
func writeKeyFile(name, key string) error {
	f, err := os.CreateTemp(filepath.Dir(name), ".demo-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename there is nothing to remove
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.WriteString(key + "\n"); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

// demoBundle is a small zip: a manifest and a readme.
func demoBundle(p demoPackage) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	files := []struct{ name, body string }{
		{"manifest.json", fmt.Sprintf(`{"plugin":%q,"version":%q,"tier":%q}`, p.name, p.version, p.tier)},
		{"README.txt", fmt.Sprintf("%s %s: a demo bundle of the meshrx registry example.\n", p.name, p.version)},
	}
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
