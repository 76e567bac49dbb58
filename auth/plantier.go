package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/meshrx/meshrx/mesh"
)

const (
	// BaselineRank is the rank of a package that declares no tier: the
	// platform baseline, covered by every plan.
	BaselineRank = 0
	// BaselinePlan is the plan an instance without a known plan is read at.
	BaselinePlan = "free"
)

// PlanTier is one rung of the plan ladder: a plan id, its rank (cheap to
// capable) and whether it covers every package regardless of rank.
type PlanTier struct {
	ID        string
	Rank      int
	AllAccess bool
}

// PlanTierRanks is an immutable snapshot of the plan ladder. Plan ids are
// trimmed and matched case-insensitively. The zero value is the empty ladder,
// under which every plan-scoped grant entry licenses nothing while plan-less
// entries are unaffected.
type PlanTierRanks struct {
	ranks     map[string]int
	allAccess map[string]bool
}

// NewPlanTierRanks builds a ladder from rows. Blank ids are skipped. Rows
// naming one id (ignoring case and surrounding space: "Admin/Tiers/Pro"
// and "Admin/Tiers/pro") that agree count once; rows that disagree (rank
// or all-access) leave that plan out of the ladder, unknown, so it
// licenses nothing and no package of its tier is covered. No row order
// decides: two stores listing the tiers in different orders build the
// same ladder, and a second row cannot widen a plan.
func NewPlanTierRanks(rows []PlanTier) PlanTierRanks {
	r := PlanTierRanks{ranks: make(map[string]int, len(rows)), allAccess: make(map[string]bool)}
	var conflicted map[string]bool
	for _, row := range rows {
		id := canonicalPlan(row.ID)
		if id == "" || conflicted[id] {
			continue
		}
		if rank, seen := r.ranks[id]; seen {
			if rank == row.Rank && r.allAccess[id] == row.AllAccess {
				continue
			}
			if conflicted == nil {
				conflicted = make(map[string]bool)
			}
			conflicted[id] = true
			delete(r.ranks, id)
			delete(r.allAccess, id)
			continue
		}
		r.ranks[id] = row.Rank
		if row.AllAccess {
			r.allAccess[id] = true
		}
	}
	return r
}

// canonicalPlan is the comparison form of a plan id: trimmed, lower-case.
func canonicalPlan(id string) string { return mesh.FoldName(strings.TrimSpace(id)) }

// planTierID is the id a tier is written and read under: canonicalPlan of
// id, which must then be a valid instance id. The one rule of
// Instances.SetPlanTier and ParsePlanTier.
func planTierID(id string) (string, error) {
	canonical := canonicalPlan(id)
	if err := ValidateInstanceID(canonical); err != nil {
		problem := err.Error()
		if idErr := (*InstanceIDError)(nil); errors.As(err, &idErr) {
			problem = idErr.Problem
		}
		return "", &PlanTierError{ID: id, Field: "id", Problem: problem}
	}
	return canonical, nil
}

// RankOf returns the rank of tier, and false when tier is blank or unknown.
func (r PlanTierRanks) RankOf(tier string) (int, bool) {
	id := canonicalPlan(tier)
	if id == "" {
		return 0, false
	}
	rank, ok := r.ranks[id]
	return rank, ok
}

// IsAllAccess reports whether tier is an all-access plan.
func (r PlanTierRanks) IsAllAccess(tier string) bool {
	id := canonicalPlan(tier)
	return id != "" && r.allAccess[id]
}

// IDs returns the plan ids the ladder knows, in canonical form, cheapest
// first; equal ranks are ordered by id.
func (r PlanTierRanks) IDs() []string {
	return r.AppendIDs(make([]string, 0, len(r.ranks)))
}

// AppendIDs appends the ids IDs returns, in its order, to dst: into an
// array of the caller's, a per-request key costs no allocation.
func (r PlanTierRanks) AppendIDs(dst []string) []string {
	from := len(dst)
	for id := range r.ranks {
		dst = append(dst, id)
	}
	slices.SortFunc(dst[from:], func(a, b string) int {
		if c := r.ranks[a] - r.ranks[b]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return dst
}

// Covers reports whether a grant entry scoped to planTier licenses a package
// declaring packageTier. An entry without a plan covers every tier; an unknown
// plan licenses nothing; an all-access plan covers everything; a package
// without a tier is at the baseline rank; an unknown package tier is covered
// by nothing.
func (r PlanTierRanks) Covers(planTier, packageTier string) bool {
	if strings.TrimSpace(planTier) == "" {
		return true
	}
	plan, ok := r.RankOf(planTier)
	if !ok {
		return false
	}
	if r.IsAllAccess(planTier) {
		return true
	}
	if strings.TrimSpace(packageTier) == "" {
		return BaselineRank <= plan
	}
	pkg, ok := r.RankOf(packageTier)
	return ok && pkg <= plan
}

// CoversInstance reports whether an instance on instancePlan may receive a
// package declaring packageTier. A blank or unknown instance plan is read as
// the baseline, never as unlimited; an all-access plan covers everything; a
// package without a tier or on the baseline plan is always covered; an
// unknown package tier is covered by nothing.
func (r PlanTierRanks) CoversInstance(instancePlan, packageTier string) bool {
	if r.IsAllAccess(instancePlan) {
		return true
	}
	pkgID := canonicalPlan(packageTier)
	if pkgID == "" || pkgID == BaselinePlan {
		return true
	}
	pkg, ok := r.ranks[pkgID]
	if !ok {
		return false
	}
	return pkg <= r.instanceRank(instancePlan)
}

// instanceRank is the rank an instance plan is decided at.
func (r PlanTierRanks) instanceRank(instancePlan string) int {
	if rank, ok := r.RankOf(instancePlan); ok {
		return rank
	}
	return BaselineRank
}

// Narrower returns the plan an instance on instancePlan is decided at under
// cap. A cap only ever lowers: a blank or all-access cap leaves the plan as
// it is, an unknown cap means the baseline, and otherwise the lower-ranked of
// the two wins (an all-access instance plan is lowered to any ranked cap).
// The result is in canonical form; a blank or unknown instance plan is
// returned as given (canonicalised), since [PlanTierRanks.CoversInstance]
// reads it as the baseline.
func (r PlanTierRanks) Narrower(instancePlan, capPlan string) string {
	plan := canonicalPlan(instancePlan)
	capID := canonicalPlan(capPlan)
	if capID == "" || r.IsAllAccess(capID) {
		return plan
	}
	capRank, ok := r.ranks[capID]
	if !ok {
		capID, capRank = BaselinePlan, BaselineRank
	}
	if r.IsAllAccess(plan) {
		return capID
	}
	if r.instanceRank(plan) <= capRank {
		return plan
	}
	return capID
}

// PlanTierError reports tier-node content that cannot be read as a plan.
type PlanTierError struct {
	ID      string // the tier node's id
	Field   string // "id", "content", "rank" or "allAccess"
	Problem string
}

func (e *PlanTierError) Error() string {
	return fmt.Sprintf("auth: plan tier %q: %s: %s", e.ID, e.Field, e.Problem)
}

// ParsePlanTier reads a tier node's JSON content into a PlanTier. Property
// names match case-insensitively ("rank", "Rank"); rank may be a JSON integer
// or a numeric string; allAccess may be a boolean, a "true"/"false" string,
// null or absent (false). A missing or unreadable rank is an error rather
// than a default: reading it as 0 would put that tier's packages at the
// baseline and widen every licence.
//
// id is read as [Instances.SetPlanTier] writes it: the result's ID is its
// canonical form (trimmed, lower case), and an id SetPlanTier refuses
// (blank, with a '/', a space, a NUL or a non-ASCII byte, ...) is refused
// here with the same *PlanTierError, so a tier node another writer put at
// such an id never joins the ladder.
func ParsePlanTier(id string, content json.RawMessage) (PlanTier, error) {
	id, err := planTierID(id)
	if err != nil {
		return PlanTier{}, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(content, &obj); err != nil || obj == nil {
		return PlanTier{}, &PlanTierError{ID: id, Field: "content", Problem: "not a JSON object"}
	}
	rankRaw, err := property(obj, id, "rank")
	if err != nil {
		return PlanTier{}, err
	}
	if rankRaw == nil {
		return PlanTier{}, &PlanTierError{ID: id, Field: "rank", Problem: "missing"}
	}
	rank, err := parseRank(id, rankRaw)
	if err != nil {
		return PlanTier{}, err
	}
	allRaw, err := property(obj, id, "allAccess")
	if err != nil {
		return PlanTier{}, err
	}
	allAccess, err := parseAllAccess(id, allRaw)
	if err != nil {
		return PlanTier{}, err
	}
	return PlanTier{ID: id, Rank: rank, AllAccess: allAccess}, nil
}

// property finds name case-insensitively; two spellings are ambiguous.
func property(obj map[string]json.RawMessage, id, name string) (json.RawMessage, error) {
	var found json.RawMessage
	var foundKey string
	for k, v := range obj {
		if !mesh.EqualNames(k, name) {
			continue
		}
		if found != nil {
			return nil, &PlanTierError{ID: id, Field: name, Problem: fmt.Sprintf("given twice (%q and %q)", foundKey, k)}
		}
		found, foundKey = v, k
	}
	return found, nil
}

func parseRank(id string, raw json.RawMessage) (int, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return 0, &PlanTierError{ID: id, Field: "rank", Problem: "not valid JSON"}
	}
	var text string
	switch t := v.(type) {
	case json.Number:
		text = t.String()
	case string:
		text = strings.TrimSpace(t)
	default:
		return 0, &PlanTierError{ID: id, Field: "rank", Problem: fmt.Sprintf("want a number or numeric string, got %s", raw)}
	}
	if n, err := strconv.ParseInt(text, 10, 32); err == nil {
		return int(n), nil
	}
	// Accept an integral float such as 2.0, which some serialisers write.
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, &PlanTierError{ID: id, Field: "rank", Problem: fmt.Sprintf("%q is not a whole number in the int32 range", text)}
	}
	return int(f), nil
}

func parseAllAccess(id string, raw json.RawMessage) (bool, error) {
	if raw == nil {
		return false, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, &PlanTierError{ID: id, Field: "allAccess", Problem: "not valid JSON"}
	}
	switch t := v.(type) {
	case nil:
		return false, nil
	case bool:
		return t, nil
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(t)); err == nil {
			return b, nil
		}
	}
	return false, &PlanTierError{ID: id, Field: "allAccess", Problem: fmt.Sprintf("want a boolean, got %s", raw)}
}
