package mesh

import (
	"fmt"
	"strings"
	"time"
)

// Budgets are the nested bounds of a mesh operation. Each inner budget is
// strictly smaller than the one around it, so an inner wait always trips
// (with its own name) before the outer one does.
type Budgets struct {
	Operation    time.Duration // a whole operation, e.g. answering a request
	Nested       time.Duration // an operation started inside another
	Permission   time.Duration // establishing what the caller may do
	QueryInitial time.Duration // a query's first (Initial) frame from every provider
}

// nestingReserve is what an inner budget leaves its outer one to react in.
const nestingReserve = 5 * time.Second

// Nest returns the budget for a wait nested in one of t: t less a reserve
// of 5s, but never less than half of t, so it is always strictly smaller.
func Nest(t time.Duration) time.Duration {
	return max(t-nestingReserve, t/2)
}

// DefaultBudgets returns 30s ⊃ 25s ⊃ 20s ⊃ 15s.
func DefaultBudgets() Budgets {
	return BudgetsFrom(30 * time.Second)
}

// BudgetsFrom nests the four budgets inside operation.
func BudgetsFrom(operation time.Duration) Budgets {
	nested := Nest(operation)
	perm := Nest(nested)
	return Budgets{Operation: operation, Nested: nested, Permission: perm, QueryInitial: Nest(perm)}
}

// Validate reports budgets that are not positive and strictly nested, with
// an *OptionsError naming the first field at fault. Its error says to start from DefaultBudgets (or BudgetsFrom), and names the
// fields left zero: only a wholly zero Budgets means the defaults.
func (b Budgets) Validate() error {
	if err := b.validate(); err != nil {
		err.Problem += "; " + b.hint()
		return err
	}
	return nil
}

func (b Budgets) validate() *OptionsError {
	if b.QueryInitial <= 0 {
		return &OptionsError{Setting: "mesh: Budgets.QueryInitial", Problem: fmt.Sprintf("must be positive, got %v", b.QueryInitial)}
	}
	pairs := []struct {
		outer, inner         time.Duration
		outerName, innerName string
	}{
		{b.Operation, b.Nested, "Operation", "Nested"},
		{b.Nested, b.Permission, "Nested", "Permission"},
		{b.Permission, b.QueryInitial, "Permission", "QueryInitial"},
	}
	for _, p := range pairs {
		if p.inner >= p.outer {
			return &OptionsError{Setting: "mesh: Budgets." + p.innerName,
				Problem: fmt.Sprintf("(%v) must be strictly smaller than %s (%v)", p.inner, p.outerName, p.outer)}
		}
	}
	return nil
}

// hint is what to do about budgets that do not validate.
func (b Budgets) hint() string {
	var zero []string
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"Operation", b.Operation}, {"Nested", b.Nested}, {"Permission", b.Permission}, {"QueryInitial", b.QueryInitial}} {
		if f.v == 0 {
			zero = append(zero, f.name)
		}
	}
	h := "start from mesh.DefaultBudgets() (or mesh.BudgetsFrom(operation), which nests the others inside it) and change the fields you need"
	if len(zero) > 0 {
		h += " (" + strings.Join(zero, ", ") + " left zero: a zero field is not its default; only a wholly zero Budgets means the defaults)"
	}
	return h
}
