package access

// The built-in role ids. A built-in always means what it means here: a
// custom role cannot redefine one.
const (
	RoleAdmin         = "Admin"
	RoleEditor        = "Editor"
	RoleViewer        = "Viewer"
	RoleCommenter     = "Commenter"
	RolePlatformAdmin = "PlatformAdmin"
)

// Role is a named set of permissions. Inheritable is carried as data; the
// fold, like the reference algorithm, lets every role granted at a scope flow
// to the scopes below it.
type Role struct {
	ID          string     `json:"id"`
	Permissions Permission `json:"permissions"`
	Inheritable bool       `json:"isInheritable"`
}

// BuiltInRoles returns the roles every mesh has, in a fresh slice.
func BuiltInRoles() []Role {
	return []Role{
		{ID: RoleAdmin, Permissions: All | Compile, Inheritable: true},
		{ID: RoleEditor, Permissions: Read | Create | Update | Comment | Execute | Thread | Api | Export | Compile, Inheritable: true},
		{ID: RoleViewer, Permissions: Read | Execute | Api, Inheritable: true},
		{ID: RoleCommenter, Permissions: Read | Comment | Api, Inheritable: true},
		{ID: RolePlatformAdmin, Permissions: All | Compile, Inheritable: true},
	}
}

// BuiltInRole returns the built-in role with id, matched exactly.
func BuiltInRole(id string) (Role, bool) {
	for _, r := range BuiltInRoles() {
		if r.ID == id {
			return r, true
		}
	}
	return Role{}, false
}
