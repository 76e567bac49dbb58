package access

// Policy is the access policy of a scope (the node {Scope}/_Policy). Each
// non-nil false flag takes that permission away at Scope and below, for
// everyone; nil leaves it alone. PublicRead grants Read to everyone at Scope
// and below, past the cap. BreaksInheritance discards the roles and the cap
// accumulated above Scope.
type Policy struct {
	Scope             string `json:"scope"`
	Read              *bool  `json:"read,omitempty"`
	Create            *bool  `json:"create,omitempty"`
	Update            *bool  `json:"update,omitempty"`
	Delete            *bool  `json:"delete,omitempty"`
	Comment           *bool  `json:"comment,omitempty"`
	Execute           *bool  `json:"execute,omitempty"`
	Thread            *bool  `json:"thread,omitempty"`
	Api               *bool  `json:"api,omitempty"`
	PublicRead        bool   `json:"publicRead,omitempty"`
	BreaksInheritance bool   `json:"breaksInheritance,omitempty"`
}

// Cap returns the permissions the policy leaves possible. Forbidding Create
// also forbids Compile and Sync, which create nodes of their own.
func (p Policy) Cap() Permission {
	c := defined
	forbid := func(flag *bool, bits Permission) {
		if flag != nil && !*flag {
			c &^= bits
		}
	}
	forbid(p.Read, Read)
	forbid(p.Create, Create|Compile|Sync)
	forbid(p.Update, Update)
	forbid(p.Delete, Delete)
	forbid(p.Comment, Comment)
	forbid(p.Execute, Execute)
	forbid(p.Thread, Thread)
	forbid(p.Api, Api)
	return c
}
