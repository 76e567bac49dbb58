package mesh

// OptionsError reports a setting a store cannot be opened with (one of its
// Options, or of its Budgets): which one, and what is wrong with it.
type OptionsError struct {
	Setting string // as its package spells it, e.g. "memstore: Options.QueueFrames", "mesh: Budgets.Nested"
	Problem string // what is wrong with it, and what to do
}

func (e *OptionsError) Error() string { return e.Setting + " " + e.Problem }
