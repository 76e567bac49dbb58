package access

// subjectSet is a user and every group it reaches. A user in no group is
// just itself (set nil), which costs no map and is never kept.
type subjectSet struct {
	user string
	set  map[string]struct{}
}

func (s subjectSet) has(subject string) bool {
	if s.set == nil {
		return subject == s.user
	}
	_, ok := s.set[subject]
	return ok
}

// subjectsOf walks the membership edges breadth-first from user. Visited
// subjects are not expanded again, so cycles terminate. Only a member of
// the snapshot's memberships is kept: Decide is asked about any name a
// caller gives, and the Fold lives until the next security write.
func (f *Fold) subjectsOf(user string) subjectSet {
	if len(f.groupsOf[user]) == 0 {
		return subjectSet{user: user}
	}
	if s, ok := f.subjects.Load(user); ok {
		return s.(subjectSet)
	}
	s := f.closure(user)
	f.subjects.Store(user, s)
	return s
}

func (f *Fold) closure(user string) subjectSet {
	set := map[string]struct{}{user: {}}
	queue := []string{user}
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		for _, g := range f.groupsOf[m] {
			if _, seen := set[g]; !seen {
				set[g] = struct{}{}
				queue = append(queue, g)
			}
		}
	}
	return subjectSet{user: user, set: set}
}
