package registry

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A consumer whose grant widens and narrows between its polls holds, after
// each poll, exactly the document a whole request gives its grant then:
// the package the narrowed grant hides is gone from what it holds, never
// kept from the wider document it asked since. Control: the wide grant
// lists it; run with entitlementKey ignoring the grant and the plan, the
// test fails (the wide polls do not list P: the documents are shared).
func TestAConsumerWhoseGrantWidensAndNarrowsBetweenPollsHoldsWhatItsGrantAllowsEachTime(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	f.publish("P", "1.0.0", "")
	key := f.instance("acme", "pro", "Plugins/A")
	narrow := f.instance("narrow", "pro", "Plugins/A") // keeps the narrow entitlement's history going
	c, _ := f.consumer(key)
	_, tag, err := indexVia(t, c, "")
	require.NoError(t, err)
	for k, grant := range []string{"Plugins/*", "Plugins/A", "Plugins/*", "Plugins/A"} {
		_, err := f.reg.SetGrant(t.Context(), "acme", "test", grant)
		require.NoError(t, err)
		f.publish("A", []string{"2.0.0", "3.0.0", "4.0.0", "5.0.0"}[k], "")
		_, _ = f.index(narrow)
		idx, got, err := indexVia(t, c, tag)
		require.NoError(t, err, "poll %d", k)
		tag = got
		want, whole := f.index(key)
		assert.Equal(t, whole.header.Get("ETag"), tag, "poll %d (%s)", k, grant)
		assert.Equal(t, listed(want), listed(idx), "poll %d (%s)", k, grant)
		_, hasP := listed(idx)["P"]
		assert.Equal(t, grant == "Plugins/*", hasP, "poll %d (%s): P listed only under the wide grant", k, grant)
	}
}

// A digest of another entitlement's document that this entitlement never
// had is a 410, never a delta: a consumer cannot ask the history of an
// entitlement for what another one listed. A digest both entitlements'
// documents had (the same entries) answers the caller's own delta, which
// names none of the other's entries. Controls: each is a 304 or a delta
// to its own entitlement; run with entitlementKey ignoring the grant and
// the plan, free's request since the pro digest is answered (a 304).
func TestADigestFromAnotherEntitlementIsGoneOrAnswersTheCallersOwnEntries(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	free := f.instance("small", "free", "Plugins/*")
	pro := f.instance("big", "pro", "Plugins/*")
	_, freeAt := f.index(free)
	_, proAt := f.index(pro)
	require.Equal(t, freeAt.header.Get("ETag"), proAt.header.Get("ETag"), "the same entries: the same digest")
	shared := freeAt.header.Get("ETag")

	f.publish("P", "1.0.0", "pro")
	_, proNow := f.index(pro)
	got := f.do(request{path: since(proNow.header.Get("ETag")), key: free})
	assert.Equal(t, http.StatusGone, got.status, "the pro document's digest asked by free: %s", got.body)
	assert.NotContains(t, string(got.body), `"P"`)
	assert.Equal(t, http.StatusNotModified, f.do(request{path: since(proNow.header.Get("ETag")), key: pro}).status, "control: pro's own")

	f.publish("A", "2.0.0", "")
	d, body := f.delta(free, shared)
	assert.Equal(t, map[string]string{"A": "2.0.0"}, versions(d.Bundles))
	assert.Empty(t, d.Removed)
	assert.NotContains(t, string(body.body), `"P"`)
	d, _ = f.delta(pro, shared)
	assert.Equal(t, map[string]string{"A": "2.0.0", "P": "1.0.0"}, versions(d.Bundles), "control: pro's delta since the same digest")
}

// Module names that differ only in case are one module in a delta as in
// the index: a publication under another spelling reaches the consumer as
// one delta applied to the entry it holds (the index keeps the first
// spelling); a package node written under a second spelling makes the
// package served to nobody (two nodes for one package), which is a
// removal in the delta; deleting it lists the package again. No whole
// index after the first, and after each change the consumer holds what a
// whole request gives.
func TestCaseVariantsOfAModuleNameAreOneEntryInADelta(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("Acme.Charts", "1.0.0", "")
	f.publish("Other", "1.0.0", "")
	key := f.instance("acme", "free", "Plugins/*")
	c, counted := f.consumer(key)
	_, tag, err := indexVia(t, c, "")
	require.NoError(t, err)
	step := func(name string, want map[string]string) {
		t.Helper()
		idx, got, err := indexVia(t, c, tag)
		require.NoError(t, err, name)
		tag = got
		whole, at := f.index(key)
		assert.Equal(t, want, listed(idx), name)
		assert.Equal(t, listed(whole), listed(idx), name)
		assert.Equal(t, at.header.Get("ETag"), tag, name)
	}

	_, err = f.served.Land(t.Context(), "acme.charts", "2.0.0", testBundle(t, "acme.charts", "2.0.0"))
	require.NoError(t, err)
	step("another spelling published", map[string]string{"Acme.Charts": "2.0.0", "Other": "1.0.0"})

	f.putPackage(packageNode("ACME.CHARTS", `{"tier":""}`))
	step("a second node for the package", map[string]string{"Other": "1.0.0"})

	f.deletePackage(DefaultSource + "/ACME.CHARTS")
	step("the second node deleted", map[string]string{"Acme.Charts": "2.0.0", "Other": "1.0.0"})

	deltas, fulls := counted.requests()
	assert.Equal(t, [2]int64{3, 1}, [2]int64{deltas, fulls}, "one delta per change, no whole index after the first")
}
