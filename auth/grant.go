package auth

import (
	"fmt"
	"strings"
	"time"

	"github.com/meshrx/meshrx/mesh"
)

// AllPackages is the package part of a grant entry that covers every package
// of its source.
const AllPackages = "*"

// PluginGrant is what a registered instance may pull from the registry. An
// instance without a grant, or with no entries, gets nothing: registering is
// identity, not entitlement.
type PluginGrant struct {
	InstanceID string       `json:"instanceId"`
	Entries    []GrantEntry `json:"entries"`
	GrantedBy  string       `json:"grantedBy"` // who last changed the grant
	UpdatedAt  time.Time    `json:"updatedAt"`
}

// GrantEntry authorises one package of a source, or all of them, optionally
// only as far as a plan reaches. Its text form is Source/Package[@plan]:
// "Plugins/*@pro", "Reinsurance/UWDeepfield", or a bare "Plugins" for the
// whole source.
type GrantEntry struct {
	Source  string `json:"source"`         // matched with ASCII case folding (mesh.EqualNames)
	Package string `json:"package"`        // matched with ASCII case folding; "*" or empty means every package
	Plan    string `json:"plan,omitempty"` // empty: every tier
}

// GrantEntryError reports grant-entry text that cannot be parsed.
type GrantEntryError struct {
	Text    string // the text as given
	Problem string
}

func (e *GrantEntryError) Error() string {
	return fmt.Sprintf("auth: grant entry %q: %s", e.Text, e.Problem)
}

// ParseGrantEntry parses the Source/Package[@plan] text form. Surrounding
// space is ignored and the plan is canonicalised to lower case. A blank
// source, package or plan, a second '/' or '@', inner whitespace, a wildcard
// source or a partial wildcard package is an error.
func ParseGrantEntry(s string) (GrantEntry, error) {
	fail := func(problem string) (GrantEntry, error) {
		return GrantEntry{}, &GrantEntryError{Text: s, Problem: problem}
	}
	text := strings.TrimSpace(s)
	if text == "" {
		return fail("blank")
	}
	if strings.ContainsAny(text, " \t\r\n") {
		return fail("contains whitespace")
	}
	for i := 0; i < len(text); i++ {
		if text[i] >= 0x80 || text[i] < 0x20 || text[i] == 0x7f {
			// Names are ASCII and compare with ASCII case folding only: a
			// letter such as U+017F (long s) must not come to name "s".
			return fail(fmt.Sprintf("contains a byte 0x%02x at %d that is not printable ASCII; names are ASCII", text[i], i))
		}
	}
	rest, plan, hasPlan := strings.Cut(text, "@")
	if hasPlan {
		if plan == "" {
			return fail("empty plan after '@'")
		}
		if strings.Contains(plan, "@") {
			return fail("more than one '@'")
		}
		if strings.Contains(plan, "/") {
			return fail("plan contains '/'")
		}
	}
	source, pkg, hasPkg := strings.Cut(rest, "/")
	switch {
	case source == "":
		return fail("empty source")
	case strings.Contains(source, "*"):
		return fail("the source must be named; only the package may be '*'")
	case !hasPkg:
		pkg = AllPackages
	case pkg == "":
		return fail("empty package after '/'")
	case strings.Contains(pkg, "/"):
		return fail("more than one '/'")
	case pkg != AllPackages && strings.Contains(pkg, "*"):
		return fail("a package is either '*' or a name, not a pattern")
	}
	return GrantEntry{Source: source, Package: pkg, Plan: canonicalPlan(plan)}, nil
}

// String renders the entry in its text form, always naming the package.
func (e GrantEntry) String() string {
	pkg := e.Package
	if pkg == "" {
		pkg = AllPackages
	}
	if plan := canonicalPlan(e.Plan); plan != "" {
		return e.Source + "/" + pkg + "@" + plan
	}
	return e.Source + "/" + pkg
}

// Matches reports whether the entry names source and pkg, both compared
// with ASCII case folding only (mesh.EqualNames: a package has one identity
// whatever its ASCII case, and no other letter folds into one), or pkg by
// "*". Plans are not considered. An entry without a source (the zero
// value; ParseGrantEntry never returns one) matches nothing.
func (e GrantEntry) Matches(source, pkg string) bool {
	if strings.TrimSpace(e.Source) == "" || !mesh.EqualNames(e.Source, source) {
		return false
	}
	return e.Package == "" || e.Package == AllPackages || mesh.EqualNames(e.Package, pkg)
}

// Allows reports whether the grant lets an instance on instancePlan pull
// package pkg, declaring packageTier, from source: some entry matches the
// pair and, when it names a plan, that plan covers the tier; and the
// instance's own plan covers the tier as well. An empty grant allows nothing.
func (g PluginGrant) Allows(source, pkg, packageTier string, ranks PlanTierRanks, instancePlan string) bool {
	if !ranks.CoversInstance(instancePlan, packageTier) {
		return false
	}
	for _, e := range g.Entries {
		if e.Matches(source, pkg) && ranks.Covers(e.Plan, packageTier) {
			return true
		}
	}
	return false
}
