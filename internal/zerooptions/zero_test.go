package zerooptions_test

import (
	"context"
	"errors"
	"go/ast"
	"go/token"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/sockbatch"
	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/registry"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/registry/landing/s3volume"
)

// zeroRows has a row for every exported struct type of the module named
// …Options or …Config (by its directory and name). Each opens its
// constructor with the zero value (and the arguments that are not options
// present) and checks the one rule: it opens, with the secure defaults the
// docs promise, or it is refused with a typed error naming the setting
// (errors.As), never a panic and never an error only its text explains.
var zeroRows = map[string]func(t *testing.T, ctx context.Context){
	"mesh.RouterConfig": func(t *testing.T, ctx context.Context) {
		r, err := mesh.NewRouter(mesh.RouterConfig{})
		require.NoError(t, err)
		require.NotNil(t, r)
	},
	"mesh/memstore.Options": func(t *testing.T, ctx context.Context) {
		s, err := memstore.New(memstore.Options{})
		require.NoError(t, err)
		defer func() { _ = s.Close() }()
		declaresSecurityTypes(t, ctx, s)
	},
	"mesh/pgstore.Options": func(t *testing.T, ctx context.Context) {
		s, err := pgstore.Open(ctx, pg.Database(t), pgstore.Options{})
		require.NoError(t, err)
		defer func() { _ = s.Close() }()
		declaresSecurityTypes(t, ctx, s)
	},
	"mesh/pgstore/pgtest.Config": func(t *testing.T, ctx context.Context) {
		// A test helper: its zero value is the throwaway server the
		// pgstore row runs on.
		t.Skip("test helper; exercised by the pgstore row")
	},
	"registry.ServerOptions": func(t *testing.T, ctx context.Context) {
		_, err := registry.NewServer(registry.ServerOptions{})
		var ce *registry.ConfigError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "ServerOptions.Served", ce.Setting)
	},
	"registry.ServedOptions": func(t *testing.T, ctx context.Context) {
		l, err := landing.NewModuleLanding(landing.DirVolume(t.TempDir()), landing.Options{})
		require.NoError(t, err)
		defer func() { _ = l.Close() }()
		s := registry.NewServedActivation(l, registry.ServedOptions{})
		defer func() { _ = s.Close(ctx) }()
		assert.Equal(t, registry.DefaultFreshness, s.Freshness())
	},
	"registry/landing.Options": func(t *testing.T, ctx context.Context) {
		l, err := landing.NewModuleLanding(landing.DirVolume(t.TempDir()), landing.Options{})
		require.NoError(t, err)
		require.NoError(t, l.Close())
	},
	"registry/landing/s3volume.Options": func(t *testing.T, ctx context.Context) {
		_, err := s3volume.New(s3volume.Options{})
		var oe *s3volume.OptionsError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "Options.Client", oe.Setting)
	},
	"registry/client.Options": func(t *testing.T, ctx context.Context) {
		_, err := client.New(client.Options{})
		var ce *client.ConfigError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "client.Options.BaseURL", ce.Setting)
	},
	"internal/sockbatch.Options": func(t *testing.T, ctx context.Context) {
		// New's other argument at its zero value too: no entries is
		// refused naming it, on every platform. Negative control, run by
		// hand: with New's old fmt.Errorf refusal this row failed
		// (errors.As found no *sockbatch.OptionsError).
		_, err := sockbatch.New(0, sockbatch.Options{})
		var oe *sockbatch.OptionsError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "entries", oe.Setting)

		r, err := sockbatch.New(1, sockbatch.Options{})
		if err != nil {
			require.ErrorIs(t, err, errors.ErrUnsupported, "the one way it may fail here")
			return
		}
		r.Close()
	},
}

// TestEveryExportedOptionsTypeOpensAtItsZeroValueOrIsRefusedNamingTheSetting.
// A type found by the scan without a row fails, and so does a row whose
// type is gone. Negative control, run: s3volume.New refused its zero
// Options with errors.New, which errors.As finds nothing in (the row
// failed); it now returns an *s3volume.OptionsError.
func TestEveryExportedOptionsTypeOpensAtItsZeroValueOrIsRefusedNamingTheSetting(t *testing.T) {
	found := exportedOptionsTypes(t)
	listed := make([]string, 0, len(zeroRows))
	for name := range zeroRows {
		listed = append(listed, name)
	}
	assert.ElementsMatch(t, found, listed, "every exported …Options and …Config struct of the module has a row")

	for _, name := range found {
		check, ok := zeroRows[name]
		if !ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			// A bound on opening (a PostgreSQL store migrates), not a pause.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			check(t, ctx)
		})
	}
}

func declaresSecurityTypes(t *testing.T, ctx context.Context, s mesh.Store) {
	t.Helper()
	snap, err := s.(mesh.SecurityReader).SecurityNodes(ctx)
	require.NoError(t, err)
	for _, typ := range mesh.SecurityTypes() {
		assert.True(t, snap.Declares(typ), "a zero Options gates %s", typ)
	}
}

// exportedOptionsTypes scans the module's non-test sources (examples are
// commands, with no exported types) for exported struct types named
// …Options or …Config, as "dir.Name" with dir relative to the module root.
func exportedOptionsTypes(t *testing.T) []string {
	t.Helper()
	root := testkit.ModuleRoot(t)
	var out []string
	testkit.ModuleFiles(t, root, func(dir string) bool { return dir == "examples" }, func(file string, f *ast.File) {
		dir := path.Dir(file)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				name := ts.Name.Name
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() &&
					(strings.HasSuffix(name, "Options") || strings.HasSuffix(name, "Config")) {
					out = append(out, dir+"."+name)
				}
			}
		}
	})
	return out
}
