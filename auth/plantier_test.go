package auth

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ladder is the Store's shape: free < personal < pro < dedicated, dedicated
// also all-access.
func ladder() PlanTierRanks {
	return NewPlanTierRanks([]PlanTier{
		{ID: "free", Rank: 0},
		{ID: "Personal", Rank: 1},
		{ID: " pro ", Rank: 2},
		{ID: "dedicated", Rank: 3, AllAccess: true},
		{ID: "  ", Rank: 9}, // blank: skipped
	})
}

func TestALadderMatchesPlanIdsIgnoringCaseAndSpaceAndSkipsBlankIds(t *testing.T) {
	r := ladder()
	rank, ok := r.RankOf("PERSONAL")
	assert.True(t, ok)
	assert.Equal(t, 1, rank)
	rank, ok = r.RankOf("pro")
	assert.True(t, ok)
	assert.Equal(t, 2, rank)
	_, ok = r.RankOf("")
	assert.False(t, ok, "blank is not a plan")
	_, ok = r.RankOf("premium")
	assert.False(t, ok, "unknown is not a plan")
	assert.True(t, r.IsAllAccess(" Dedicated"))
	assert.False(t, r.IsAllAccess("pro"))
	assert.False(t, r.IsAllAccess(""))
	assert.Equal(t, []string{"free", "personal", "pro", "dedicated"}, r.IDs())
}

func TestIdsAreOrderedByRankThenById(t *testing.T) {
	r := NewPlanTierRanks([]PlanTier{{ID: "b", Rank: 1}, {ID: "a", Rank: 1}, {ID: "z", Rank: 0}})
	assert.Equal(t, []string{"z", "a", "b"}, r.IDs())
}

// Two rows naming one plan that disagree leave the plan out, in either
// order: the ladder is the same whichever order a store lists the tier
// nodes in, and the second row cannot widen the plan (a higher rank, or
// all-access). Rows that agree count once. Negative control, run by hand:
// with the later row winning (as before), the reversed order gave rank 2
// where the first gave 5, and "Pro" made "pro" all-access.
func TestRowsThatDisagreeOnAPlanLeaveItOutWhateverTheirOrder(t *testing.T) {
	rows := []PlanTier{{ID: "free", Rank: 0}, {ID: "pro", Rank: 2}, {ID: "PRO ", Rank: 5}, {ID: "team", Rank: 3}, {ID: "Team", Rank: 3},
		{ID: "gold", Rank: 4}, {ID: "Gold", Rank: 4, AllAccess: true}}
	for _, order := range [][]PlanTier{rows, reversed(rows)} {
		r := NewPlanTierRanks(order)
		_, known := r.RankOf("pro")
		assert.False(t, known, "pro: rows disagree on its rank")
		_, known = r.RankOf("gold")
		assert.False(t, known, "gold: rows disagree on all-access")
		assert.False(t, r.IsAllAccess("gold"))
		rank, known := r.RankOf("team")
		assert.True(t, known, "team: rows agree")
		assert.Equal(t, 3, rank)
		assert.Equal(t, []string{"free", "team"}, r.IDs())
		assert.False(t, r.Covers("pro", "free"), "an ambiguous plan licenses nothing")
		assert.False(t, r.CoversInstance("team", "pro"), "no package of an ambiguous tier is covered")
	}
}

func reversed(rows []PlanTier) []PlanTier {
	out := make([]PlanTier, len(rows))
	for i, r := range rows {
		out[len(rows)-1-i] = r
	}
	return out
}

func TestTheZeroLadderLicensesNoPlanScopedEntryButLeavesPlanlessEntriesAlone(t *testing.T) {
	var empty PlanTierRanks
	assert.True(t, empty.Covers("", "pro"), "an entry without a plan is unaffected")
	assert.False(t, empty.Covers("pro", ""), "a plan the ladder does not know licenses nothing")
	assert.Empty(t, empty.IDs())
	assert.True(t, empty.CoversInstance("pro", ""), "baseline packages ship with the platform")
	assert.False(t, empty.CoversInstance("pro", "pro"), "an unknown package tier is covered by nothing")
}

func TestCoversDecidesAPlanScopedEntry(t *testing.T) {
	r := ladder()
	cases := []struct {
		name, plan, pkgTier string
		want                bool
	}{
		{"blank plan covers every tier", "", "dedicated", true},
		{"whitespace plan is blank", "  ", "unknown-tier", true},
		{"unknown plan licenses nothing", "premium", "", false},
		{"unknown plan licenses nothing, even free", "premium", "free", false},
		{"all-access plan covers a higher tier", "dedicated", "pro", true},
		{"all-access plan covers an unknown tier", "dedicated", "mystery", true},
		{"blank package tier is the baseline", "personal", "", true},
		{"baseline covered by the lowest plan", "free", "", true},
		{"unknown package tier is covered by nothing", "pro", "mystery", false},
		{"lower tier covered", "pro", "personal", true},
		{"equal tier covered", "pro", "PRO", true},
		{"higher tier not covered", "personal", "pro", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, r.Covers(c.plan, c.pkgTier))
		})
	}
	// A plan whose rank is below the baseline does not cover baseline
	// packages: the baseline compare really is a compare.
	neg := NewPlanTierRanks([]PlanTier{{ID: "trial", Rank: -1}})
	assert.False(t, neg.Covers("trial", ""))
}

func TestCoversInstanceReadsABlankOrUnknownInstancePlanAsTheBaseline(t *testing.T) {
	r := ladder()
	cases := []struct {
		name, plan, pkgTier string
		want                bool
	}{
		{"blank plan, blank package", "", "", true},
		{"blank plan, free package", "", "FREE", true},
		{"blank plan is not unlimited", "", "personal", false},
		{"unknown plan is the baseline", "premium", "personal", false},
		{"unknown plan still gets free", "premium", "free", true},
		{"all-access plan covers everything", "dedicated", "mystery", true},
		{"ranked: lower tier", "pro", "personal", true},
		{"ranked: equal tier", "pro", "pro", true},
		{"ranked: higher tier", "personal", "pro", false},
		{"unknown package tier", "pro", "mystery", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, r.CoversInstance(c.plan, c.pkgTier))
		})
	}
	// "free" is covered even where the ladder ranks it above the plan.
	odd := NewPlanTierRanks([]PlanTier{{ID: "free", Rank: 5}, {ID: "pro", Rank: 2}})
	assert.True(t, odd.CoversInstance("pro", "free"))
}

func TestNarrowerOnlyEverLowersAPlan(t *testing.T) {
	r := ladder()
	cases := []struct {
		name, plan, cap, want string
	}{
		{"no cap", "Pro", "", "pro"},
		{"all-access cap caps nothing", "pro", "dedicated", "pro"},
		{"unknown cap is the baseline", "pro", "premium", BaselinePlan},
		{"lower cap lowers", "pro", "personal", "personal"},
		{"higher cap does not raise", "personal", "pro", "personal"},
		{"equal cap", "pro", "PRO", "pro"},
		{"all-access plan lowered to a ranked cap", "dedicated", "personal", "personal"},
		{"blank plan stays blank under a higher cap", "", "pro", ""},
		{"unknown plan stays as given under a higher cap", "Premium", "pro", "premium"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := r.Narrower(c.plan, c.cap)
			assert.Equal(t, c.want, got)
			// Whatever it returns, the result never covers more than the
			// plan it was given.
			for _, tier := range []string{"", "free", "personal", "pro", "dedicated", "mystery"} {
				if r.CoversInstance(got, tier) {
					assert.True(t, r.CoversInstance(c.plan, tier), "narrowed %q to %q but it covers %q", c.plan, got, tier)
				}
			}
		})
	}
}

func TestParsePlanTierReadsRankAndAllAccessShapeTolerantly(t *testing.T) {
	cases := []struct {
		content string
		want    PlanTier
	}{
		{`{"rank":2}`, PlanTier{ID: "pro", Rank: 2}},
		{`{"Rank":2,"AllAccess":true}`, PlanTier{ID: "pro", Rank: 2, AllAccess: true}},
		{`{"RANK":"3","allaccess":"true"}`, PlanTier{ID: "pro", Rank: 3, AllAccess: true}},
		{`{"rank":" 4 ","allAccess":null,"price":12.5}`, PlanTier{ID: "pro", Rank: 4}},
		{`{"rank":2.0,"allAccess":false}`, PlanTier{ID: "pro", Rank: 2}},
		{`{"rank":-1}`, PlanTier{ID: "pro", Rank: -1}},
	}
	for _, c := range cases {
		t.Run(c.content, func(t *testing.T) {
			got, err := ParsePlanTier(" pro ", json.RawMessage(c.content))
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestParsePlanTierRejectsWhatItCannotReadWithATypedError(t *testing.T) {
	cases := []struct {
		name, id, content, field string
	}{
		{"blank id", " ", `{"rank":1}`, "id"},
		{"not json", "pro", `{rank:1}`, "content"},
		{"trailing garbage", "pro", `{"rank":1} x`, "content"},
		{"not an object", "pro", `[1]`, "content"},
		{"null content", "pro", `null`, "content"},
		{"empty content", "pro", ``, "content"},
		{"missing rank", "pro", `{"allAccess":true}`, "rank"},
		{"null rank", "pro", `{"rank":null}`, "rank"},
		{"boolean rank", "pro", `{"rank":true}`, "rank"},
		{"fractional rank", "pro", `{"rank":1.5}`, "rank"},
		{"non-numeric string", "pro", `{"rank":"high"}`, "rank"},
		{"rank out of range", "pro", `{"rank":1e12}`, "rank"},
		{"two spellings", "pro", `{"rank":1,"Rank":2}`, "rank"},
		{"numeric allAccess", "pro", `{"rank":1,"allAccess":1}`, "allAccess"},
		{"word allAccess", "pro", `{"rank":1,"allAccess":"yes"}`, "allAccess"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePlanTier(c.id, json.RawMessage(c.content))
			var pe *PlanTierError
			require.True(t, errors.As(err, &pe), "got %v", err)
			assert.Equal(t, c.field, pe.Field)
			assert.NotEmpty(t, pe.Problem)
		})
	}
}
