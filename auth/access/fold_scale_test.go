package access

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	membershipCount = 10_000
	firstPage       = 50
)

// tenThousandMemberships is an organisation of 10,000 membership edges:
// 9,000 users in 300 teams, teams in 30 departments, departments in "staff",
// project groups nested in teams, and alice. Alice's own team membership is
// the first row, so it is on any first page; the edges that make her a
// contractor (alice → vendor-team → contractors) are the last two rows.
func tenThousandMemberships() []GroupMembership {
	ms := make([]GroupMembership, 0, membershipCount)
	ms = append(ms, member("alice", "team-7"))
	for i := range 9000 {
		ms = append(ms, member(fmt.Sprintf("u%04d", i), fmt.Sprintf("team-%d", i%300)))
	}
	for k := range 300 {
		ms = append(ms, member(fmt.Sprintf("team-%d", k), fmt.Sprintf("dept-%d", k%30)))
	}
	for d := range 30 {
		ms = append(ms, member(fmt.Sprintf("dept-%d", d), "staff"))
	}
	for j := 0; len(ms) < membershipCount-2; j++ {
		ms = append(ms, member(fmt.Sprintf("proj-%d", j), fmt.Sprintf("team-%d", j%300)))
	}
	ms = append(ms, member("vendor-team", "contractors"), member("alice", "vendor-team"))
	return ms
}

func orgSnapshot(memberships []GroupMembership) Snapshot {
	return Snapshot{
		Memberships: memberships,
		Assignments: []Assignment{
			grant("", "staff", RoleViewer),
			grant("acme", "team-7", RoleEditor),
			deny("acme", "contractors", RoleEditor),
		},
	}
}

func TestAGroupDenyIsDecisiveOnlyWhenTheFoldIsReadWhole(t *testing.T) {
	ms := tenThousandMemberships()
	require.Len(t, ms, membershipCount)

	whole := mustFold(t, orgSnapshot(ms))
	assert.Equal(t, Denied, whole.Decide("alice", "acme/roadmap", Update),
		"alice reaches contractors through the last rows, and contractors are denied Editor at acme")
	assert.Equal(t, Allowed, whole.Decide("u0007", "acme/roadmap", Update),
		"the deny is aimed at contractors, not at team-7")

	// Negative control: the same fold built from only the first page of
	// memberships loses the contractor edges and fails open. This is why the
	// fold is never paged.
	paged := mustFold(t, orgSnapshot(ms[:firstPage]))
	assert.Equal(t, Allowed, paged.Decide("alice", "acme/roadmap", Update))
}

func BenchmarkEffectiveWith10000Memberships(b *testing.B) {
	f := mustFold(b, orgSnapshot(tenThousandMemberships()))
	for _, c := range []struct{ name, user, path string }{
		{"contractor-denied", "alice", "acme/roadmap/q3"},
		{"team-member", "u0007", "acme/roadmap/q3"},
		{"own-partition", "u0007", "u0007/notes/today"},
		{"anonymous", "", "acme/roadmap/q3"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var sink Permission
			for b.Loop() {
				sink |= f.Effective(c.user, c.path)
			}
			_ = sink
		})
	}
}

func BenchmarkNewFoldWith10000Memberships(b *testing.B) {
	s := orgSnapshot(tenThousandMemberships())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewFold(s); err != nil {
			b.Fatal(err)
		}
	}
}
