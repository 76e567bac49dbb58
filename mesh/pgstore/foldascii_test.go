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

// Migration 0007, applied to a Turkish database gated by lower() until
// then, moves the fold to what the ASCII fold gates: the node of type "Key"
// spelt with the Kelvin sign, which lower() let in, goes, and the version
// moves; a store opened with its gated types then folds "invoice", which
// lower() kept out, beside "Invoice".
//
// Negative control: the state before 0007 is asserted (the Kelvin "Key"
// folded, "invoice" not), so the test sees what the migration changes;
// with the DELETE of 0007 removed, "the Kelvin Key leaves the fold", "the
// version moves with the fold" and "Open adds the ASCII folds of its gated
// types" failed (run). A gated "Instance" (lower(): 'ınstance') stays in
// the fold with no Open after the migration; without 0007's carrying of
// 'ı' types over to their ASCII fold, "a gated Instance stays in the fold"
// and "a write to the Instance node ... moves the version" fail (run).
func TestMigration0007MovesAFoldGatedByLowerToTheASCIIFold(t *testing.T) {
	t.Parallel()
	dbURL := turkishDatabase(t, pg.Database(t))
	conn := connect(t, dbURL)
	ctx := testContext(t)
	applyMigrationsBefore(t, conn, "0007_security_fold_ascii.sql")
	_, err := conn.Exec(ctx, `SELECT public.security_fold_add_types(ARRAY['Invoice', 'Key', 'Instance'])`)
	require.NoError(t, err)
	schema, err := EnsurePartition(ctx, conn, "acme")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "mesh_nodes"}.Sanitize()+` (namespace, id, node_type)
		VALUES ('acme/Docs', 'invoice', 'invoice'), ('acme/Docs', 'Invoice', 'Invoice'), ('acme/Docs', 'kelvin', E'\u212Aey'),
		       ('acme/Docs', 'Instance', 'Instance')`)
	require.NoError(t, err)
	folded := func() (ids []string, version int64) {
		rows, err := conn.Query(ctx, `SELECT id FROM public.security_fold ORDER BY id COLLATE "C"`)
		require.NoError(t, err)
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.NoError(t, conn.QueryRow(ctx, `SELECT version FROM public.security_fold_version`).Scan(&version))
		return ids, version
	}
	before, v0 := folded()
	require.Equal(t, []string{"Instance", "Invoice", "kelvin"}, before, "lower() in tr-TR: the Kelvin Key folded, invoice not")

	require.NoError(t, Migrate(ctx, conn))
	after, v1 := folded()
	assert.NotContains(t, after, "kelvin", "the Kelvin Key leaves the fold")
	assert.Greater(t, v1, v0, "the version moves with the fold")
	// No Open in between (a store migrated by MigrateURL, or older
	// processes still running): a gated type whose lower() fold left ASCII
	// stays gated, and a write to its node moves the version.
	assert.Contains(t, after, "Instance", "a gated Instance stays in the fold right after the migration")
	_, err = conn.Exec(ctx, `UPDATE `+pgx.Identifier{schema, "mesh_nodes"}.Sanitize()+` SET content = '{"k":1}' WHERE id = 'Instance'`)
	require.NoError(t, err)
	_, v2 := folded()
	assert.Greater(t, v2, v1, "a write to the Instance node after the migration moves the version")

	openStore(t, dbURL, Options{GatedTypes: []string{"Invoice", "Key"}})
	opened, _ := folded()
	assert.Equal(t, []string{"Instance", "Invoice", "invoice"}, opened, "Open adds the ASCII folds of its gated types")
}
