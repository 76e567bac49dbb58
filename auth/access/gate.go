package access

// Gate opens one node to everyone: Read at exactly Path, for signed-in and
// anonymous callers alike, past any policy cap. It is what a node of a gated
// type (a published store entry, say) contributes to the fold. A gate only
// grants: it never denies, never caps, and opens nothing below Path, which is
// the one shape an assignment (inherited downwards) cannot express.
type Gate struct {
	Path string `json:"path"`
}
