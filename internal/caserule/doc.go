// Package caserule holds no code: its test scans every non-test Go file of
// the module for Unicode case mapping (strings.EqualFold, ToLower, ToUpper,
// ...), which must not decide that two names are one (docs/security.md,
// "One case rule for names"): names fold with mesh.EqualNames and
// mesh.FoldName. The few uses that are not name comparisons are listed,
// each with its reason, in the test's allow list.
package caserule
