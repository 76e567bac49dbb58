package client

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// installedList is a test Installed: it answers list, or fails with fail.
type installedList struct {
	mu    sync.Mutex
	list  map[string]string
	fail  error
	calls int
}

func (l *installedList) installed(context.Context) (map[string]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if l.fail != nil {
		return nil, l.fail
	}
	return maps.Clone(l.list), nil
}

func (l *installedList) set(list map[string]string, fail error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list, l.fail = list, fail
}

func (l *installedList) called() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// A Reconciler with Installed starts from what it lists: a plugin
// installed at the listed version is not downloaded, one at another
// version is, and a plugin the index does not list is Dropped. The list is
// read once per Run, not per poll. Negative control (run): without
// Installed read, A was downloaded again and "installed at the listed
// version" failed.
func TestAReconcilerStartsFromWhatInstalledLists(t *testing.T) {
	reg := newFakeRegistry(t)
	reg.publish("Acme.A", "1.0.0", testkit.RandomBytes(1<<10), "")
	reg.publish("Acme.B", "2.0.0", testkit.RandomBytes(1<<10), "")
	list := &installedList{list: map[string]string{"acme.a": "1.0.0", "Acme.B": "1.0.0", "Acme.Gone": "3.0.0"}}
	u := runReconciler(t, reg, func(r *Reconciler) { r.Installed = list.installed })
	st := testkit.Receive(t, u.polls, "the first poll")
	require.True(t, st.Healthy, st.LastError)
	assert.Equal(t, "Acme.B", testkit.Receive(t, u.applied, "B's newer version").entry.Plugin)
	u.noApply(t, "installed at the listed version")
	assert.Zero(t, reg.downloaded("Acme.A", "1.0.0"), "installed at the listed version")
	assert.Equal(t, map[string]string{"acme.a": "1.0.0", "Acme.B": "2.0.0", "Acme.Gone": "3.0.0"}, st.Applied,
		"the installer's spellings are kept")
	assert.Equal(t, map[string]string{"Acme.Gone": "3.0.0"}, st.Dropped)

	require.True(t, u.next(t).Healthy)
	assert.Equal(t, 1, list.called(), "read once per Run")
}

// Installed that fails, or lists one plugin twice (names equal without
// case), fails the poll (step "installed") before anything is downloaded,
// and is read again at the next poll. Negative control (run): with the
// duplicate check removed, the second poll applied Acme.A while the list
// named it twice, and "nothing is applied" failed.
func TestAnInstalledListThatFailsOrNamesAPluginTwiceFailsThePollAndIsReadAgain(t *testing.T) {
	reg := newFakeRegistry(t)
	reg.publish("Acme.A", "1.0.0", testkit.RandomBytes(1<<10), "")
	list := &installedList{fail: errors.New("disk on fire")}
	u := runReconciler(t, reg, func(r *Reconciler) { r.Installed = list.installed })
	st := testkit.Receive(t, u.polls, "the first poll")
	assert.False(t, st.Healthy)
	assert.Contains(t, st.LastError, "registry: installed: disk on fire")
	u.noApply(t, "nothing is applied while the installed plugins are not known")

	list.set(map[string]string{"Acme.B": "1.0.0", "acme.b": "1.0.1"}, nil)
	st = u.next(t)
	assert.False(t, st.Healthy)
	assert.Contains(t, st.LastError, `Reconciler.Installed lists "Acme.B" and "acme.b", one plugin to the registry`)
	u.noApply(t, "nothing is applied")

	list.set(map[string]string{"Acme.B": "1.0.0"}, nil)
	st = u.next(t)
	require.True(t, st.Healthy, st.LastError)
	assert.Equal(t, "Acme.A", testkit.Receive(t, u.applied, "A applied").entry.Plugin)
	assert.Equal(t, map[string]string{"Acme.A": "1.0.0", "Acme.B": "1.0.0"}, st.Applied)
	assert.Equal(t, 3, list.called())
}
