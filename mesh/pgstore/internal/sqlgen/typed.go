package sqlgen

import (
	"github.com/meshrx/meshrx/mesh/internal/scalar"

	"strings"

	"github.com/meshrx/meshrx/mesh"
)

// Version: mesh reads it as its decimal text, which is always a number.

// versionMatch is "some query value matches version": numerically for a
// number, as a glob for a glob, and otherwise as a lower-cased string.
func (b *builder) versionMatch(c mesh.Cond) pred {
	var alts []string
	var parts []pred
	for _, w := range c.Values {
		if tooHard(w) {
			b.residual(c, tooHardWhy)
			parts = append(parts, superset)
			continue
		}
		glob := strings.Contains(w, "*")
		if num, ok := parseNumber(w); ok && !glob {
			parts = append(parts, exactly(b.versionNumber("=", num)))
			continue
		}
		var pat strings.Builder
		lowerPattern(&pat, w, glob)
		alts = append(alts, pat.String())
	}
	if re := fullMatch(alts); len(re) > maxPatternBytes {
		b.residual(c, tooHardWhy)
		parts = append(parts, superset)
	} else if re != "" {
		parts = append(parts, exactly("n.version::text ~ "+b.param(re, "text")))
	}
	return anyOf(parts...)
}

func (b *builder) versionCompare(c mesh.Cond, op string) pred {
	w := c.Values[0]
	if num, ok := parseNumber(w); ok {
		return exactly(b.versionNumber(op, num))
	}
	// A number against a non-number compares as strings; a version's text
	// has nothing to lower-case, and "C" compares bytes as Go does.
	return exactly(`n.version::text COLLATE "C" ` + op + " " + b.param(strings.ToLower(w), "text"))
}

// versionNumber compares version with a number as mesh does: two integers
// exactly, anything else as float64.
func (b *builder) versionNumber(op string, num scalar.Number) string {
	if num.IsInt {
		return "n.version " + op + " " + b.param(num.Int, "int8")
	}
	return "n.version::float8 " + op + " " + b.param(num.Float, "float8")
}

// State: mesh reads it as its name, so any condition on it selects a fixed
// set of states. The set is found by asking mesh itself about each state,
// which makes it exact for every operator without re-deriving mesh's rules.

// namedStates returns every State that has a name, in numeric order.
func namedStates() []mesh.State {
	var states []mesh.State
	for s := range 256 {
		if _, err := mesh.State(s).MarshalText(); err == nil {
			states = append(states, mesh.State(s))
		}
	}
	return states
}

// stateNode returns a node that differs from others only in its state.
func stateNode(s mesh.State) mesh.Node { return mesh.Node{ID: "x", Path: "x", State: s} }

func (b *builder) stateCond(c mesh.Cond) pred {
	q := &mesh.Query{Filter: c}
	states := namedStates()
	var in []int16
	for _, s := range states {
		if q.Matches(stateNode(s)) {
			in = append(in, int16(s))
		}
	}
	switch len(in) {
	case 0:
		return predFalse
	case len(states):
		return predTrue
	}
	return exactly("n.state = ANY(" + b.param(in, "int2[]") + ")")
}
