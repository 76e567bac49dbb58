package rx

import "sync"

// room is where producers wait for a consumer to make room in a bounded
// queue guarded by the caller's mutex: a channel made when the first
// producer waits and closed (wake) to let every waiting one look again.
type room struct {
	space chan struct{}
}

// wait releases mu and waits until wake or until done is closed. Woken, it
// retakes mu and reports true; on done it reports false with mu released.
// mu is held on the call.
func (r *room) wait(mu *sync.Mutex, done <-chan struct{}) bool {
	if r.space == nil {
		r.space = make(chan struct{})
	}
	space := r.space
	mu.Unlock()
	select {
	case <-space:
		mu.Lock()
		return true
	case <-done:
		return false
	}
}

// wake lets the producers waiting look again; the caller's mutex is held.
func (r *room) wake() {
	if r.space != nil {
		close(r.space)
		r.space = nil
	}
}
