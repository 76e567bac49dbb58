package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
// Plugins/*, and returns a fresh key for it. The fresh key replaces the
// instance's others: on a database an earlier start used, the key that
// start printed is revoked, so demo keys do not pile up (with replicas, the
// key the last one printed is the one that works).
func setUpDemo(ctx context.Context, store mesh.Store, landing *landing.ModuleLanding, served *registry.ServedActivation) (string, error) {
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
	return reg.RotateKey(ctx, demoInstance)
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
