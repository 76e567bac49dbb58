package access

import (
	"strconv"
	"strings"
)

// Permission is a set of operations allowed on a node.
type Permission uint32

// The permission flags. All is Read through Export; Sync and Compile are
// granted only explicitly.
const (
	Read Permission = 1 << iota
	Create
	Update
	Delete
	Comment
	Execute
	Thread
	Api
	Export
	Sync
	Compile

	None Permission = 0
	All             = Read | Create | Update | Delete | Comment | Execute | Thread | Api | Export

	// defined is every flag this package knows.
	defined = All | Sync | Compile
)

// permissionNames lists the flags in bit order.
func permissionNames() [11]string {
	return [...]string{"Read", "Create", "Update", "Delete", "Comment", "Execute", "Thread", "Api", "Export", "Sync", "Compile"}
}

// Has reports whether p includes every flag of q.
func (p Permission) Has(q Permission) bool { return p&q == q }

// String renders p as flag names joined by '|', using "All" for the All
// group and "None" for the empty set; unknown bits are shown in hex.
func (p Permission) String() string {
	if p == None {
		return "None"
	}
	var parts []string
	rest := p
	if rest.Has(All) {
		parts = append(parts, "All")
		rest &^= All
	}
	for i, name := range permissionNames() {
		if bit := Permission(1) << i; rest&bit != 0 {
			parts = append(parts, name)
			rest &^= bit
		}
	}
	if rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return strings.Join(parts, "|")
}
