package auth

// Registry is the old name of Instances, kept only until registry and
// examples move to the new name (the merge of the registry split); it will
// be removed.
type Registry = Instances

// Ids is the old name of IDs; see Registry.
func (r PlanTierRanks) Ids() []string { return r.IDs() }
