// Package bellstate keeps a bell as the client of its event stream
// (examples/bell's GET /events) sees it: it applies the stream's events in
// order — a "bell" event, the whole state, and "change" events, what
// changed since the event before — and tells a client that missed one, so
// that it asks for the whole state again (by reconnecting) instead of
// showing a wrong one.
//
// Every event that carries a state has an SSE id, the stream's sequence
// number: 1 for the first (always a whole state), one more for each after.
// A change applies only to the state of the event just before it (its id
// minus one), and says how many notifications and unread ones the state
// has after it, which the client checks.
//
// The page (examples/bell/static/index.html) does the same in JavaScript;
// bellload and the bell's tests use this package.
package bellstate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Item is a notification as a stream shows it.
type Item struct {
	ID         string    `json:"id"`
	Title      string    `json:"title"`
	Message    string    `json:"message"`
	Icon       string    `json:"icon"`
	TargetPath string    `json:"targetPath"`
	Recipient  string    `json:"recipient"`
	Type       string    `json:"type"`
	CreatedBy  string    `json:"createdBy"`
	CreatedAt  time.Time `json:"createdAt"`
	IsRead     bool      `json:"isRead"`
	MovedFrom  string    `json:"movedFrom,omitempty"`
	Addressee  string    `json:"addressee"`
	Own        bool      `json:"own"`
	// Source is the entity the notification is about, which the bell
	// groups by.
	Source string `json:"source"`
}

// Key names a notification: its addressee (compared without case) and id.
type Key struct {
	Addressee string `json:"addressee"`
	ID        string `json:"id"`
}

func (it *Item) key() Key { return Key{Addressee: strings.ToLower(it.Addressee), ID: it.ID} }

// Group is the notifications about one source, newest first.
type Group struct {
	Source string
	Items  []*Item
}

// Full is the data of a "bell" event: the whole state.
type Full struct {
	Viewer string `json:"viewer"`
	Unread int    `json:"unread"`
	Groups []struct {
		Source string            `json:"source"`
		Items  []json.RawMessage `json:"items"`
	} `json:"groups"`
}

// Change is the data of a "change" event: the notifications added or
// changed since the event before (Put) and those gone (Remove), and what
// the state holds after it.
type Change struct {
	Viewer string            `json:"viewer"`
	Unread int               `json:"unread"`
	Count  int               `json:"count"`
	Put    []json.RawMessage `json:"put"`
	Remove []Key             `json:"remove"`
}

// Event is one event of a stream, as its fields came.
type Event struct {
	Name string // "bell", "change", "hello", "failure", …
	ID   string // "" when the event has none
	Data []byte
}

// GapError says a change event does not follow the state the client holds:
// an event was missed (or the stream started with a change). The client
// must get the whole state again.
type GapError struct {
	Have uint64 // the id of the last event applied; 0 for none
	Got  string // the change's id
}

func (e *GapError) Error() string {
	return fmt.Sprintf("bellstate: change %q does not follow event %d: an event was missed; get the whole state again", e.Got, e.Have)
}

// MismatchError says the state after a change is not the one the event
// describes (a lost or doubled change the ids did not show).
type MismatchError struct {
	Count, Unread         int // after applying
	WantCount, WantUnread int // as the event says
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("bellstate: after the change the state holds %d notifications (%d unread), the event says %d (%d unread); get the whole state again",
		e.Count, e.Unread, e.WantCount, e.WantUnread)
}

// State is a bell's state as the client has applied it. The zero State
// holds nothing and awaits a whole state. An error from Apply leaves it
// awaiting one again.
type State struct {
	id     uint64 // the last event applied; 0: a whole state is awaited
	items  map[Key]*Item
	unread int
}

// ID returns the id of the last event applied, 0 when a whole state is
// awaited.
func (s *State) ID() uint64 { return s.id }

// Len returns the number of notifications the state holds.
func (s *State) Len() int { return len(s.items) }

// Unread returns the number of unread notifications.
func (s *State) Unread() int { return s.unread }

// Find returns the notification titled title, or nil.
func (s *State) Find(title string) *Item {
	for _, it := range s.items {
		if it.Title == title {
			return it
		}
	}
	return nil
}

// Reset drops the state: a whole state is awaited.
func (s *State) Reset() { *s = State{} }

// Apply applies ev: a "bell" event replaces the state, a "change" event
// updates it when it follows the last event applied (else *GapError) and
// leaves it as the event says (else *MismatchError). Other events are
// ignored. in, if not nil, shares the decoded notifications between
// states (bellload keeps thousands).
func (s *State) Apply(ev Event, in *Interner) error {
	switch ev.Name {
	case "bell", "change":
	default:
		return nil
	}
	id, err := strconv.ParseUint(ev.ID, 10, 64)
	if err != nil || id == 0 {
		s.Reset()
		return fmt.Errorf("bellstate: %s event with id %q, not a sequence number", ev.Name, ev.ID)
	}
	if ev.Name == "bell" {
		return s.applyFull(id, ev.Data, in)
	}
	if s.id == 0 || id != s.id+1 {
		have := s.id
		s.Reset()
		return &GapError{Have: have, Got: ev.ID}
	}
	var c Change
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		s.Reset()
		return fmt.Errorf("bellstate: change event: %w", err)
	}
	for _, k := range c.Remove {
		k.Addressee = strings.ToLower(k.Addressee)
		if it, ok := s.items[k]; ok {
			s.drop(it)
		}
	}
	for _, raw := range c.Put {
		it, err := in.item(raw)
		if err != nil {
			s.Reset()
			return err
		}
		s.put(it)
	}
	if len(s.items) != c.Count || s.unread != c.Unread {
		err := &MismatchError{Count: len(s.items), Unread: s.unread, WantCount: c.Count, WantUnread: c.Unread}
		s.Reset()
		return err
	}
	s.id = id
	return nil
}

func (s *State) applyFull(id uint64, data []byte, in *Interner) error {
	var f Full
	if err := json.Unmarshal(data, &f); err != nil {
		s.Reset()
		return fmt.Errorf("bellstate: bell event: %w", err)
	}
	*s = State{items: make(map[Key]*Item)}
	for _, g := range f.Groups {
		for _, raw := range g.Items {
			it, err := in.item(raw)
			if err != nil {
				s.Reset()
				return err
			}
			s.put(it)
		}
	}
	if s.unread != f.Unread {
		err := &MismatchError{Count: len(s.items), Unread: s.unread, WantCount: len(s.items), WantUnread: f.Unread}
		s.Reset()
		return err
	}
	s.id = id
	return nil
}

func (s *State) put(it *Item) {
	if s.items == nil {
		s.items = make(map[Key]*Item)
	}
	if old, ok := s.items[it.key()]; ok {
		s.drop(old)
	}
	s.items[it.key()] = it
	if !it.IsRead {
		s.unread++
	}
}

func (s *State) drop(it *Item) {
	delete(s.items, it.key())
	if !it.IsRead {
		s.unread--
	}
}

// Groups returns the state as the bell shows it: the notifications
// newest first (then by addressee and id), grouped by source (compared
// without case), the group with the newest first.
func (s *State) Groups() []Group {
	all := make([]*Item, 0, len(s.items))
	for _, it := range s.items {
		all = append(all, it)
	}
	slices.SortFunc(all, func(a, b *Item) int {
		return cmp.Or(
			b.CreatedAt.Compare(a.CreatedAt),
			strings.Compare(strings.ToLower(a.Addressee), strings.ToLower(b.Addressee)),
			strings.Compare(a.ID, b.ID),
		)
	})
	var out []Group
	index := map[string]int{}
	for _, it := range all {
		k := strings.ToLower(it.Source)
		gi, ok := index[k]
		if !ok {
			gi = len(out)
			index[k] = gi
			out = append(out, Group{Source: it.Source})
		}
		out[gi].Items = append(out[gi].Items, it)
	}
	return out
}

// Interner decodes each distinct notification's JSON once and shares the
// result (read-only) between the states that hold it; it keeps at most
// internMax, starting afresh when full. A nil *Interner decodes every
// time.
type Interner struct {
	items map[string]*Item
}

const internMax = 1 << 14

func (in *Interner) item(raw json.RawMessage) (*Item, error) {
	if in != nil {
		if it, ok := in.items[string(raw)]; ok {
			return it, nil
		}
	}
	it := new(Item)
	if err := json.Unmarshal(raw, it); err != nil {
		return nil, fmt.Errorf("bellstate: a notification: %w", err)
	}
	if in != nil {
		if in.items == nil || len(in.items) >= internMax {
			in.items = make(map[string]*Item)
		}
		in.items[string(raw)] = it
	}
	return it, nil
}
