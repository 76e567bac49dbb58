package registry

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// heldFrames delivers src's Initial at once and holds every later frame
// until release is closed: a live query whose frames come late.
type heldFrames struct {
	src     rx.Observable[mesh.Change]
	release <-chan struct{}
}

func (h heldFrames) Subscribe(o rx.Observer[mesh.Change]) rx.Subscription {
	return h.src.Subscribe(rx.NewObserver(func(c mesh.Change) {
		if c.Kind != mesh.Initial {
			<-h.release
		}
		o.OnNext(c)
	}, o.OnError, o.OnCompleted))
}

// A publication of a new package is answered once this replica's catalog
// knows the package's tier, so the publisher's next index read lists it
// however late the catalog's live query delivers the node's frame (a busy
// subscriber; PostgreSQL's notification). The frame is held until the
// publication logs that it waits for it. Control run: without the wait the
// publication answered 201 while the frame was held and the next index
// read listed nothing — what TestRepublishingWithoutATierKeepsThePackagesTier
// met once under load.
func TestAPublishedPackageIsInThePublishersNextIndexReadHoweverLateTheCatalogsFrame(t *testing.T) {
	release := make(chan struct{})
	open := sync.OnceFunc(func() { close(release) })
	f := newFixture(t, fixtureOptions{mesh: func(m *watchedMesh) {
		m.catalogQ = func() rx.Observable[mesh.Change] {
			return heldFrames{src: m.Store.Query("namespace:" + DefaultSource + " nodeType:" + PackageNodeType), release: release}
		}
	}})
	t.Cleanup(open)
	key := f.instance("acme", "free", "Plugins/*")
	idx, _ := f.index(key) // after the catalog's Initial
	require.Empty(t, idx.Bundles)

	replies := f.send(publishRequest("Acme.Free", "?version=1.0.0", testPublishToken, testkit.ModuleArchive(t, "Acme.Free", "1.0.0", 1)))
	bound := time.NewTimer(testkit.Bound)
	defer bound.Stop()
	var got reply
wait:
	for {
		select {
		case got = <-replies:
			break wait
		case r := <-f.logs.Added:
			if r.Message == catalogCatchUpMessage {
				open() // the publication waits for the frame: deliver it
			}
		case <-bound.C:
			require.FailNow(t, "the publication got no answer within the bound")
		}
	}
	require.NoError(t, got.err)
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	idx, _ = f.index(key)
	assert.Equal(t, map[string]string{"Acme.Free": "1.0.0"}, listed(idx), "the publisher's next index read lists it")
}
