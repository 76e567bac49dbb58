package meshtest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// Convergence bounds, in real time, every wait of the suite: for a live
// frame, a change notice, a query's first frame, concurrent writers. An
// in-process store answers at once; one that listens to a database answers
// within milliseconds. A healthy store never comes near it, and a passing
// run never spends it, so it is generous: at 10s, six writers of 120
// operations on PostgreSQL did not finish in time on a 2-core machine
// running the whole suite beside two CPU-burning loops.
const Convergence = 60 * time.Second

// Run runs the conformance suite as subtests of t. newService must return a
// fresh, empty store each time it is called (once per subtest), and arrange
// its release with t.Cleanup. Every subscription the suite makes ends when
// its subtest does.
func Run(t *testing.T, newService func(t *testing.T) mesh.Store) {
	s := &suite{bound: Convergence}
	for _, c := range s.checks() {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, newService(t))
		})
	}
}

// suite holds what the checks share; its bound is shortened by the suite's
// own tests, which run checks against stores that are broken on purpose.
type suite struct {
	bound time.Duration
	// partitions is the reach check's partition count; zero means
	// ReachPartitions. The suite's own probes run it smaller.
	partitions int
}

type check struct {
	name string
	run  func(t testing.TB, svc mesh.Store)
}

func (s *suite) checks() []check {
	return []check{
		{"TheFirstFrameIsTheInitialWithTheFullMatchingSet", s.initialIsTheFullSet},
		{"WritesReachALiveQueryAsAddedUpdatedAndRemovedFrames", s.liveFrames},
		{"TheInitialIsOrderedBySortFieldThenPath", s.ordering},
		{"ALimitKeepsTheFirstRowsInQueryOrder", s.limit},
		{"ALimitedLiveQueryShowsANodeDeletedAndWrittenAgainWhileItsSubscriberWasBusy", s.limitedRewrite},
		{"ALimitedLiveQueryKeepsItsFirstNAsWritesPushNodesInAndOut", s.limitedFrames},
		{"ASelectKeepsOnlyTheSelectedFieldsOfEveryFramesNodes", s.projection},
		{"GetAnswersTheNodeWhenPresentAndNothingWhenAbsent", s.getPresentAbsent},
		{"AClosedStoreAnswersUnavailableNeverAbsent", s.closedIsUnavailable},
		{"TheVersionBumpsOnlyOnARealChange", s.versions},
		{"AConditionalWriteLandsOnlyAtTheExpectedVersion", s.conditionalWrites},
		{"BadInputIsRefusedWithATypedErrorAndLosesNothing", s.badInput},
		{"AValueOneStoreCannotHoldIsRefusedByEveryStore", s.unstorable},
		{"APartitionNameIsASCIIAndNoOtherLetterReachesAnotherPartition", s.partitionNames},
		{"APartitionNamePostgreSQLReservesOrTruncatesIsRefusedByEveryStore", s.reservedPartitionNames},
		{"AQueryMatchesNonASCIICaseVariantsByTheQueryTextRuleInEveryStore", s.textCase},
		{"SecurityNodesWhosePathsDifferOnlyInCaseAreBothMaterialised", s.securityCaseVariants},
		{"EveryWriteOfAGatedTypeMovesTheSecurityVersionAndNoOtherWriteDoes", s.securityVersionMoves},
		{"ASatelliteLivesInItsOwnersPartition", s.satellites},
		{"AGlobalSatelliteIsPinnedToItsRegisteredSchema", s.globalSatellites},
		{"AnUnregisteredGlobalSatelliteIsUnroutableAndCannotBeWritten", s.unregisteredGlobal},
		{"APartitionNamedAfterAGlobalSatellitesSchemaIsRefusedAndNoFanOutReadsTheSatellite", s.globalSchemaName},
		{"AnUnanchoredQueryIsRefusedUnlessItDeclaresPartitionsAll", s.unanchored},
		{"AWriteOfAnUnrelatedTypeSendsNoFrameToAConstrainedQuery", s.relevance},
		{"EveryWriteIsAnnouncedWithItsPathOpAndNodeType", s.notices},
		{"ConcurrentLiveQueriesAndWritersConvergeToAFreshInitial", s.convergence},
		{"ABlockedSubscriberHoldsUpNoWriterAndCatchesUpOnRelease", s.slowSubscriber},
		{"AnObserverThatPanicsOnADeliveryEndsOnlyItsOwnSubscription", s.observerPanics},
		{"AmongThousandsOfLiveQueriesEachWriteReachesExactlyThoseItChanges", s.reach},
		{"AQueryNamingManyPartitionsAndAGlobalSatelliteSeesWritesToEachOfThem", s.manySchemas},
	}
}

// put writes n and fails the test when the store refuses it.
func put(t testing.TB, svc mesh.Store, n mesh.Node) mesh.Node {
	t.Helper()
	stored, err := svc.Put(writeContext(t), n)
	require.NoError(t, err, "put %s", n.Path)
	return stored
}

func del(t testing.TB, svc mesh.Store, path string) {
	t.Helper()
	require.NoError(t, svc.Delete(writeContext(t), path), "delete %s", path)
}

// writeContext bounds one write.
func writeContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Convergence)
	t.Cleanup(cancel)
	return ctx
}

func node(path, nodeType string) mesh.Node {
	return mesh.Node{Path: path, NodeType: nodeType, Name: path}
}

func withContent(n mesh.Node, content string) mesh.Node {
	n.Content = json.RawMessage(content)
	return n
}

func named(n mesh.Node, name string) mesh.Node {
	n.Name = name
	return n
}
