package auth

import (
	"context"
	"fmt"
	"strings"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// StageKnownPlans names the wait for the plan ladder when a plan is checked.
const StageKnownPlans = "known plans"

// UnknownPlanError reports a plan the ladder does not have. Known lists the
// plans it has, cheapest first.
type UnknownPlanError struct {
	Plan  string
	Known []string
}

func (e *UnknownPlanError) Error() string {
	known := "none: write the ladder with SetPlanTier first"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("auth: unknown plan %q; the known plans are %s", e.Plan, known)
}

// checkPlan refuses a plan the ladder does not have with an
// *UnknownPlanError. A blank plan is the baseline and always known.
func (r *Instances) checkPlan(ctx context.Context, plan string) error {
	id := canonicalPlan(plan)
	if id == "" {
		return nil
	}
	if _, ok, err := r.read(ctx, StageKnownPlans, TierPath(id)); err != nil || ok {
		return err
	}
	known, err := r.KnownPlans(ctx)
	if err != nil {
		return err
	}
	return &UnknownPlanError{Plan: plan, Known: known}
}

// KnownPlans lists the ladder's plans (the ids of the PlanTier nodes),
// cheapest first, in one read bounded by ReadBudget. A registry checks a
// package's tier against it.
func (r *Instances) KnownPlans(ctx context.Context) ([]string, error) {
	if err := r.usable(); err != nil {
		return nil, err
	}
	budget := r.ReadBudget
	if budget <= 0 {
		budget = DefaultReadBudget
	}
	initial := rx.Take(rx.Filter(r.Mesh.Query(tierQuery), func(c mesh.Change) bool { return c.Kind == mesh.Initial }), 1)
	ch, err := rx.First(ctx, rx.TimeoutStage(initial, StageKnownPlans, budget, r.clock()))
	if err != nil {
		return nil, fmt.Errorf("auth: registry: listing the plan ladder: %w", err)
	}
	rows := make([]PlanTier, 0, len(ch.Items))
	for _, n := range ch.Items {
		if t, err := ParsePlanTier(n.ID, n.Content); err == nil {
			rows = append(rows, t)
		}
	}
	return NewPlanTierRanks(rows).IDs(), nil
}
