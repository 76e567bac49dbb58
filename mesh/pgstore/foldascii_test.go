package pgstore

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// turkishDatabase creates a database beside dbURL's whose locale is
// Turkish (ICU tr-TR), where lower() folds 'I' to a dotless 'ı' and the
// Kelvin sign to 'k', and returns its URL; it is dropped when t ends.
func turkishDatabase(t *testing.T, dbURL string) string {
	t.Helper()
	ctx := testContext(t)
	admin := connect(t, dbURL)
	name := admin.Config().Database + "_tr"
	_, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()+
		` TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'tr-TR' LOCALE 'C'`)
	require.NoError(t, err, "an ICU tr-TR database (PostgreSQL 15+ built with ICU)")
	t.Cleanup(func() { // after the store's Close, registered later
		ctx, cancel := context.WithTimeout(context.Background(), testBudget)
		defer cancel()
		_, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
		assert.NoError(t, err)
	})
	if strings.HasPrefix(dbURL, "postgres://") || strings.HasPrefix(dbURL, "postgresql://") {
		u, err := url.Parse(dbURL)
		require.NoError(t, err)
		u.Path = "/" + name
		return u.String()
	}
	return fmt.Sprintf("%s dbname=%s", dbURL, name)
}

// The security fold gates a node type when mesh.FoldName (ASCII letters
// only) folds it to a gated type's fold, in any database locale: in a
// Turkish one "invoice" is gated by "Invoice", and "Key" spelt with the
// Kelvin sign (U+212A) is not gated by "Key", as in Go; public.mesh_fold_ascii
// folds every name as mesh.FoldName does.
//
// Negative control (run): without migration 0007 (gating by lower()), the
// gating and fold assertions failed for "invoice" and "INVOICE" (not
// gated), and for the dotless "ınvoice" and the Kelvin "Key" (gated); the
// database's lower() differs from mesh.FoldName here (asserted below), so
// the test does see the locale.
func TestGatingFoldsTypeNamesAsMeshFoldNameDoesInATurkishDatabase(t *testing.T) {
	t.Parallel()
	dbURL := turkishDatabase(t, pg.Database(t))
	gated := []string{"Invoice", "Key"}
	s := openStore(t, dbURL, Options{GatedTypes: gated})
	conn := connect(t, dbURL)
	ctx := testContext(t)

	var lowerI, lowerK string
	require.NoError(t, conn.QueryRow(ctx, `SELECT lower('INVOICE'), lower(E'\u212Aey')`).Scan(&lowerI, &lowerK))
	require.NotEqual(t, mesh.FoldName("INVOICE"), lowerI, "lower() folds I as Turkish does here")
	require.NotEqual(t, mesh.FoldName("\u212Aey"), lowerK, "lower() folds the Kelvin sign here")

	names := []string{"Invoice", "invoice", "INVOICE", "\u0130nvoice", "\u0131nvoice", "Key", "KEY", "key", "\u212Aey", "Article"}
	folds := make([]string, len(gated))
	for i, g := range gated {
		folds[i] = mesh.FoldName(g)
	}
	for i, name := range names {
		path := fmt.Sprintf("acme/Docs/n%d", i)
		put(t, s, mesh.Node{Path: path, NodeType: name})
		want := slices.Contains(folds, mesh.FoldName(name))
		var isGated, inFold bool
		require.NoError(t, conn.QueryRow(ctx, `SELECT public.mesh_is_security_type($1),
			EXISTS (SELECT 1 FROM public.security_fold WHERE path = $2)`, name, path).Scan(&isGated, &inFold))
		assert.Equal(t, want, isGated, "%q gated as mesh.FoldName says", name)
		assert.Equal(t, want, inFold, "the node of type %q in the fold as mesh.FoldName says", name)
	}
	for _, name := range names {
		var folded string
		require.NoError(t, conn.QueryRow(ctx, `SELECT public.mesh_fold_ascii($1)`, name).Scan(&folded))
		assert.Equal(t, mesh.FoldName(name), folded, "%q", name)
	}
}
