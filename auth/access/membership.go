package access

// GroupMembership says that Member (a user id or a group id) belongs to each
// of Groups. Groups may be members of groups; the fold follows the edges
// transitively and stops at cycles.
type GroupMembership struct {
	Member string   `json:"member"`
	Groups []string `json:"groups"`
}
