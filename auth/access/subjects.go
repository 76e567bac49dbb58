package access

// subjectSet is a user and every group it reaches.
type subjectSet map[string]struct{}

func (s subjectSet) has(subject string) bool {
	_, ok := s[subject]
	return ok
}

// subjectsOf walks the membership edges breadth-first from user. Visited
// subjects are not expanded again, so cycles terminate.
func (f *Fold) subjectsOf(user string) subjectSet {
	if s, ok := f.subjects.Load(user); ok {
		return s.(subjectSet)
	}
	s := f.closure(user)
	f.subjects.Store(user, s)
	return s
}

func (f *Fold) closure(user string) subjectSet {
	set := subjectSet{user: {}}
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
	return set
}
