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
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
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

// Key names a notification: its addressee (ASCII case folded, as the bell
// keys it: FoldName, the name rule of mesh.FoldName) and id.
type Key struct {
	Addressee string `json:"addressee"`
	ID        string `json:"id"`
}

// is reports whether it is the notification named by addressee and id
// (the addressees compared by EqualNames), without allocating. The ids' last bytes are compared first: ids of one length
// share long prefixes.
func (it *Item) is(addressee, id string) bool {
	n := len(id)
	return len(it.ID) == n && (n == 0 || it.ID[n-1] == id[n-1]) && it.ID == id && EqualNames(it.Addressee, addressee)
}

// EqualNames reports whether a and b are one name to the bell: equal under
// ASCII case folding, every other byte only itself (mesh.EqualNames, which
// this package, importing nothing of meshrx, repeats). Not Unicode folding:
// it makes "\u212Aate" (KELVIN SIGN) kate, another user's name.
func EqualNames(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

// FoldName is the key under which EqualNames names are equal: 'A'–'Z'
// lowered, every other byte as it is (mesh.FoldName).
func FoldName(name string) string {
	for i := 0; i < len(name); i++ {
		if 'A' <= name[i] && name[i] <= 'Z' {
			b := []byte(name)
			for j := i; j < len(b); j++ {
				b[j] = lowerASCII(b[j])
			}
			return string(b)
		}
	}
	return name
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Group is the notifications about one source, newest first.
type Group struct {
	Source string
	Items  []*Item
}

// Full is the data of a "bell" event: the whole state.
type Full struct {
	Unread int `json:"unread"`
	Groups []struct {
		Source string            `json:"source"`
		Items  []json.RawMessage `json:"items"`
	} `json:"groups"`
}

// Change is the data of a "change" event: the notifications added or
// changed since the event before (Put) and those gone (Remove), and what
// the state holds after it.
type Change struct {
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
	WantCount, WantUnread int // as the event says (a whole state says no count: WantCount is Count)
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("bellstate: after the change the state holds %d notifications (%d unread), the event says %d (%d unread); get the whole state again",
		e.Count, e.Unread, e.WantCount, e.WantUnread)
}

// State is a bell's state as the client has applied it. The zero State
// holds nothing and awaits a whole state. An error from Apply leaves it
// awaiting one again.
//
// The notifications are kept in a slice, searched from end to end while
// it holds at most indexFrom of them: a bell shows tens, and a change
// applied to each of 10,000 such states (bellload's broadcast) then costs
// no allocation and no hashing — hashing each state's map cost more than
// the bell's event took to read. A larger state keeps an index besides
// (at), so that a whole state applies, and a change puts, in linear work
// however large the state (states are not bounded in size).
type State struct {
	id     uint64 // the last event applied; 0: a whole state is awaited
	viewer string // whose state it is, as the whole state said
	items  []*Item
	at     map[Key]int // where items holds each (addressee by FoldName); nil until it holds more than indexFrom
	ids    idFilter    // the ids items may hold (while not indexed): most puts are new, and rule out the search
	unread int
	last   []*Item // what the last event applied put; read-only, maybe shared
}

// ID returns the id of the last event applied, 0 when a whole state is
// awaited.
func (s *State) ID() uint64 { return s.id }

// Viewer returns whose state it is, as its whole state said.
func (s *State) Viewer() string { return s.viewer }

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

// Put returns the notifications the last event applied added or changed
// (every one, for a whole state). The slice is read-only.
func (s *State) Put() []*Item { return s.last }

// Reset drops the state: a whole state is awaited.
func (s *State) Reset() { *s = State{} }

// Apply applies ev: a "bell" event replaces the state, a "change" event
// updates it when it follows the last event applied (else *GapError) and
// leaves it as the event says (else *MismatchError). Other events are
// ignored. c, if not nil, decodes each distinct event once for every
// state that applies it (bellload keeps thousands).
func (s *State) Apply(ev Event, c *Cache) error {
	switch ev.Name {
	case "bell", "change":
	default:
		return nil
	}
	err := s.apply(ev, c)
	if err != nil {
		s.Reset()
	}
	return err
}

func (s *State) apply(ev Event, c *Cache) error {
	id, err := strconv.ParseUint(ev.ID, 10, 64)
	if err != nil || id == 0 {
		return fmt.Errorf("bellstate: %s event with id %q, not a sequence number", ev.Name, ev.ID)
	}
	viewer, rest, err := splitViewer(ev.Data)
	if err != nil {
		return fmt.Errorf("bellstate: %s event: %w", ev.Name, err)
	}
	if ev.Name == "bell" {
		f, err := c.whole(rest)
		if err != nil {
			return err
		}
		items := s.items[:0]
		clear(s.items)
		at := s.at
		clear(at)
		*s = State{viewer: string(viewer), items: items, at: at, last: f.items}
		for _, it := range f.items {
			s.put(it)
		}
		if s.unread != f.unread {
			return &MismatchError{Count: len(s.items), Unread: s.unread, WantCount: len(s.items), WantUnread: f.unread}
		}
		s.id = id
		return nil
	}
	if s.id == 0 || id != s.id+1 {
		return &GapError{Have: s.id, Got: ev.ID}
	}
	if string(viewer) != s.viewer {
		return fmt.Errorf("bellstate: a change of %q's state applied to %q's", viewer, s.viewer)
	}
	ch, err := c.change(rest)
	if err != nil {
		return err
	}
	for _, k := range ch.remove {
		if i := s.index(k.Addressee, k.ID); i >= 0 {
			s.drop(i)
		}
	}
	for _, it := range ch.put {
		s.put(it)
	}
	s.last = ch.put
	if len(s.items) != ch.count || s.unread != ch.unread {
		return &MismatchError{Count: len(s.items), Unread: s.unread, WantCount: ch.count, WantUnread: ch.unread}
	}
	s.id = id
	return nil
}

// splitViewer reads the viewer that heads an event's data and returns the
// data after it: `{"viewer":"ops","unread":…` gives "ops" and `,"unread":…`.
func splitViewer(data []byte) (viewer []byte, rest []byte, err error) {
	const head = `{"viewer":"`
	if !bytes.HasPrefix(data, []byte(head)) {
		return nil, nil, errors.New(`the data does not start with {"viewer":"…"`)
	}
	end := bytes.IndexByte(data[len(head):], '"')
	if end < 0 {
		return nil, nil, errors.New("the viewer does not end")
	}
	end += len(head)
	if bytes.IndexByte(data[len(head):end], '\\') >= 0 {
		// An escaped name (not one the bell issues): decoded the long way.
		var v struct{ Viewer string }
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, nil, err
		}
		i := bytes.Index(data, []byte(`,"unread":`))
		if i < 0 {
			return nil, nil, errors.New("no unread count")
		}
		return []byte(v.Viewer), data[i:], nil
	}
	return data[len(head):end], data[end+1:], nil
}

// Cache decodes each distinct event once, and shares the result
// (read-only) between the states that apply it: a broadcast's change is
// the same for every admin but for the viewer at its head. It keeps at
// most cacheMax of each kind and cacheBytes of each kind's encodings,
// starting afresh when full (an encoding larger than cacheBytes is not
// kept). It is not safe for concurrent use; a nil *Cache decodes every
// time.
type Cache struct {
	wholes      map[string]*whole
	changes     map[string]*change
	items       map[string]*Item
	wholeBytes  int
	changeBytes int
	itemBytes   int
}

const (
	cacheMax   = 1 << 12
	cacheBytes = 8 << 20
)

// keep adds key's decoding v to the cache part m holding *size bytes of
// encodings, starting the part afresh when it is full; an encoding larger
// than the bound is not kept.
func keep[V any](m *map[string]V, size *int, key []byte, v V) {
	if len(key) > cacheBytes {
		return
	}
	if *m == nil || len(*m) >= cacheMax || *size+len(key) > cacheBytes {
		*m, *size = make(map[string]V), 0
	}
	(*m)[string(key)] = v
	*size += len(key)
}

type whole struct {
	unread int
	items  []*Item
}

type change struct {
	unread, count int
	put           []*Item
	remove        []Key // addressees by FoldName
}

// body makes the JSON object of rest, an event's data after its viewer.
func body(rest []byte) []byte {
	if len(rest) > 0 && rest[0] == ',' {
		return append([]byte{'{'}, rest[1:]...)
	}
	return rest
}

func (c *Cache) whole(rest []byte) (*whole, error) {
	if c != nil {
		if w, ok := c.wholes[string(rest)]; ok {
			return w, nil
		}
	}
	var f Full
	if err := json.Unmarshal(body(rest), &f); err != nil {
		return nil, fmt.Errorf("bellstate: bell event: %w", err)
	}
	w := &whole{unread: f.Unread}
	for _, g := range f.Groups {
		for _, raw := range g.Items {
			it, err := c.item(raw)
			if err != nil {
				return nil, err
			}
			w.items = append(w.items, it)
		}
	}
	if c != nil {
		keep(&c.wholes, &c.wholeBytes, rest, w)
	}
	return w, nil
}

func (c *Cache) change(rest []byte) (*change, error) {
	if c != nil {
		if ch, ok := c.changes[string(rest)]; ok {
			return ch, nil
		}
	}
	var d Change
	if err := json.Unmarshal(body(rest), &d); err != nil {
		return nil, fmt.Errorf("bellstate: change event: %w", err)
	}
	ch := &change{unread: d.Unread, count: d.Count}
	for _, k := range d.Remove {
		ch.remove = append(ch.remove, Key{Addressee: FoldName(k.Addressee), ID: k.ID})
	}
	for _, raw := range d.Put {
		it, err := c.item(raw)
		if err != nil {
			return nil, err
		}
		ch.put = append(ch.put, it)
	}
	if c != nil {
		keep(&c.changes, &c.changeBytes, rest, ch)
	}
	return ch, nil
}

func (c *Cache) item(raw json.RawMessage) (*Item, error) {
	if c != nil {
		if it, ok := c.items[string(raw)]; ok {
			return it, nil
		}
	}
	it := new(Item)
	if err := json.Unmarshal(raw, it); err != nil {
		return nil, fmt.Errorf("bellstate: a notification: %w", err)
	}
	if c != nil {
		keep(&c.items, &c.itemBytes, raw, it)
	}
	return it, nil
}

// indexFrom is the most notifications a state searches end to end; past
// it the state keeps an index.
const indexFrom = 64

// keyOf is it's key in the index.
func keyOf(it *Item) Key { return Key{Addressee: FoldName(it.Addressee), ID: it.ID} }

// index returns where the state holds the notification named by
// addressee (compared by EqualNames) and id, or -1.
func (s *State) index(addressee, id string) int {
	if len(s.at) > 0 || len(s.items) > indexFrom {
		s.indexed()
		if i, ok := s.at[Key{Addressee: FoldName(addressee), ID: id}]; ok {
			return i
		}
		return -1
	}
	if !s.ids.mayHold(id) {
		return -1
	}
	for i, it := range s.items {
		if it.is(addressee, id) {
			return i
		}
	}
	return -1
}

// put adds it, or puts it in the place of the notification it changes.
func (s *State) put(it *Item) {
	if i := s.index(it.Addressee, it.ID); i >= 0 {
		if !s.items[i].IsRead {
			s.unread--
		}
		s.items[i] = it
	} else {
		s.items = append(s.items, it)
		if len(s.at) > 0 {
			s.at[keyOf(it)] = len(s.items) - 1
		}
		s.ids.add(it.ID)
	}
	if !it.IsRead {
		s.unread++
	}
}

// drop removes the notification at i (the order is Groups's to make).
func (s *State) drop(i int) {
	if !s.items[i].IsRead {
		s.unread--
	}
	last := len(s.items) - 1
	if len(s.at) > 0 {
		delete(s.at, keyOf(s.items[i]))
		if i != last {
			s.at[keyOf(s.items[last])] = i
		}
	}
	s.items[i] = s.items[last]
	s.items[last] = nil
	s.items = s.items[:last]
	if len(s.at) == 0 { // a filter only gains ids: made again from what is left
		s.ids = idFilter{}
		for _, it := range s.items {
			s.ids.add(it.ID)
		}
	}
}

// indexed makes the index of a state past indexFrom if it has none.
func (s *State) indexed() {
	if len(s.at) > 0 {
		return
	}
	if s.at == nil {
		s.at = make(map[Key]int, len(s.items))
	}
	for i, it := range s.items {
		s.at[keyOf(it)] = i
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
			strings.Compare(FoldName(a.Addressee), FoldName(b.Addressee)),
			strings.Compare(a.ID, b.ID),
		)
	})
	var out []Group
	index := map[string]int{}
	for _, it := range all {
		k := FoldName(it.Source)
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
