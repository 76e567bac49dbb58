package registry

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// TestAVersionPublishedAgainAfterAnUninstallElsewhereIsServedByBothReplicas:
// replica b uninstalls a module a published; a publishes the same bytes
// again and answers created. a serves it at once (its own write) and b
// one journal period later. Negative control: before the landing's fix
// the publication answered created false with the old record and neither
// replica served the module.
func TestAVersionPublishedAgainAfterAnUninstallElsewhereIsServedByBothReplicas(t *testing.T) {
	root := t.TempDir()
	la := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "a"})
	lb := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "b"})
	clk := rxtest.NewClock()
	a := newJournalServed(t, la, clk, newMem(t))
	b := newJournalServed(t, lb, clk, newMem(t)) // separate feeds: only the journal joins them
	archive := testkit.ModuleArchive(t, "Again", "1.0.0", 2)
	_, err := a.Land(context.Background(), "Again", "1.0.0", archive)
	require.NoError(t, err)
	read(t, a)
	read(t, b)
	_, err = b.Uninstall(context.Background(), "Again")
	require.NoError(t, err)
	tailedNow(t, a, clk)
	clk.Advance(a.journalPeriod)
	tailedNow(t, a, clk)
	require.NotContains(t, servedVersions(read(t, a).Activation()), "Again", "a absorbed b's uninstall")

	_, created, err := a.LandArchive(context.Background(), "Again", "1.0.0", bytes.NewReader(archive), int64(len(archive)))
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, "1.0.0", servedVersions(read(t, a).Activation())["Again"], "a serves what it answered")
	clk.Advance(b.journalPeriod)
	tailedNow(t, b, clk)
	assert.Equal(t, "1.0.0", servedVersions(read(t, b).Activation())["Again"], "b agrees within a journal period")
}
