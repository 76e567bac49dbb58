package rx

import "testing"

// A chain gives an upstream a child scope per Take, Concat, SelectMany,
// Timeout...: per subscription. Children were kept in a map, one more
// allocation per parent with children (the largest per-request allocation
// of the registry's index route); with the map back, this test sees 4
// allocations per run instead of 3.
func TestAChildScopeCostsNoAllocationBeyondItself(t *testing.T) {
	allocs := testing.AllocsPerRun(200, func() {
		p := newScope()
		a, b := p.child(), p.child()
		a.cancel()
		p.cancel()
		if !b.cancelled() {
			t.Fatal("cancelling the parent did not cancel its child")
		}
	})
	if allocs > 3 {
		t.Fatalf("a parent and two children cost %.0f allocations; want 3 (the scopes themselves)", allocs)
	}
}

// Children leave the list from its head, middle and tail, and the ones left
// are all cancelled with the parent: the list neither loses nor keeps one.
func TestCancellingAParentCancelsExactlyTheChildrenStillInIt(t *testing.T) {
	p := newScope()
	var kids []*scope
	for range 6 {
		kids = append(kids, p.child())
	}
	for _, i := range []int{0, 3, 5} { // oldest, a middle one, newest
		kids[i].cancel()
	}
	linked := 0
	for c := p.children; c != nil; c = c.next {
		linked++
	}
	if linked != 3 {
		t.Fatalf("%d children linked after 3 of 6 left; want 3", linked)
	}
	p.cancel()
	for i, c := range kids {
		if !c.cancelled() {
			t.Fatalf("child %d not cancelled with its parent", i)
		}
	}
	if p.children != nil {
		t.Fatal("the cancelled parent still holds children")
	}
	if late := p.child(); !late.cancelled() {
		t.Fatal("a child of a cancelled parent is live")
	}
}
