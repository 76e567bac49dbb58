package access

// Decision is the three-valued answer to "may this user do this here?".
// The zero value is Undetermined, and Undetermined denies: a fold that could
// not be read is never taken as an answer.
type Decision uint8

const (
	// Undetermined means the security legs could not be read in full.
	Undetermined Decision = iota
	// Allowed means the fold grants every requested permission.
	Allowed
	// Denied means the fold was read and does not grant them.
	Denied
)

// Allows reports whether the request may proceed; only Allowed does.
func (d Decision) Allows() bool { return d == Allowed }

func (d Decision) String() string {
	switch d {
	case Allowed:
		return "Allowed"
	case Denied:
		return "Denied"
	case Undetermined:
		return "Undetermined"
	default:
		return "Decision(invalid)"
	}
}

// Decide answers whether user holds every permission in need at path. A nil
// Fold (the legs could not be read) is Undetermined, and so is a path at or
// below an unreadable scope (Snapshot.Unreadable). Asking for None is
// Denied: a request that names no permission (a field left at its zero
// value) is a mistake, and grants nothing.
func (f *Fold) Decide(user, path string, need Permission) Decision {
	if f == nil || f.unreadableAt(normalizePath(path)) {
		return Undetermined
	}
	if need == None {
		return Denied
	}
	if f.Effective(user, path).Has(need) {
		return Allowed
	}
	return Denied
}
