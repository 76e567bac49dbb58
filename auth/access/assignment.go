package access

// Assignment grants or denies roles to Subject (a user or a group) at
// Scope: the path the {scope}/_Access container hangs under, "" for the
// root container _Access. It applies at Scope and, through inheritance, below.
type Assignment struct {
	Scope   string      `json:"scope"`
	Subject string      `json:"subject"`
	Roles   []RoleGrant `json:"roles"`
}

// RoleGrant is one role of an assignment. A denied role is removed at the
// assignment's scope after that scope's grants are added, so a deny beats a
// grant at the same scope.
type RoleGrant struct {
	Role   string `json:"role"`
	Denied bool   `json:"denied,omitempty"`
}
