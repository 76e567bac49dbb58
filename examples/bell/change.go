package main

import (
	"bytes"
	"strconv"
	"unsafe"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/notifications"
)

// A stream's events after its first are changes: the notifications added
// or changed since the state the stream wrote before (put, each as a whole
// state shows it) and the ones gone (remove, by addressee and id), with
// the state's unread count and size after it, which the client checks:
//
//	id: 7
//	event: change
//	data: {"viewer":"ops","unread":3,"count":12,"put":[{…}],"remove":[{"addressee":"Admin","id":"…"}]}
//
// so that a notification added to a bell of 30 costs the stream one
// notification's bytes, not 30. A change listing as many notifications as
// the state holds after it is sent as the whole state ("bell") instead.
// Each event's id is the stream's sequence number, the first (whole)
// state's 1: a client that sees a change whose id does not follow the
// last it applied has missed one and reconnects, and a new stream always
// starts with the whole state (the server keeps no history per viewer, so
// it does not resume from Last-Event-ID).

// changeKey names a change between two states by their first groups (nil
// for an empty state), as frameCache.states names a state. A key holds
// its two states alive, so the cache keeps few of them (see maxChanges).
type changeKey struct{ from, to *notifications.Group }

// sharedChange is a change's encoding from its unread count to the end of
// its event, as every stream that owns none of its state's notifications
// shows it; or whole, when the change is no smaller than the state.
type sharedChange struct {
	key        changeKey
	addressees []string // of the state after it: a viewer among them owns some
	whole      bool     // send the state whole instead
	rest       []byte
	size       int // rest's bytes and the estimated bytes of the two states its key holds alive
}

// maxChanges bounds how many change encodings frameCache keeps: streams
// share a change within one broadcast (from the state before it to the
// one after, or from an older one for a stream that skipped states), so
// the few most recent suffice. Each entry's key holds its two states
// alive, so the ring also drops its oldest entries while their sizes
// (encodings and states) exceed frameCacheBytes, keeping the newest: with
// a large bell only the latest change is kept, and the cache pins no
// state beyond the two of the change every stream is taking.
const maxChanges = 8

// notificationBytes estimates a notification's memory without its strings.
const notificationBytes = int(unsafe.Sizeof(notifications.Notification{}))

// stateBytes estimates the memory of a state's notifications.
func stateBytes(st notifications.BellState) int {
	b := 0
	for _, g := range st.Groups {
		for _, n := range g.Items {
			b += notificationBytes + itemKeySize(n)
		}
	}
	return b
}

// firstGroup is a state's key: its first group, nil when it is empty.
func firstGroup(st notifications.BellState) *notifications.Group {
	if len(st.Groups) == 0 {
		return nil
	}
	return &st.Groups[0]
}

// changeEvent appends to buf the event that takes viewer's client from
// state from, which it holds, to state to: a "change" event, or the whole
// state (a "bell" event) when the change is no smaller. viewerJSON is
// viewer as a JSON string. The caller has written the event's id.
func (c *frameCache) changeEvent(buf *bytes.Buffer, viewerJSON, viewer string, from, to notifications.BellState) {
	key := changeKey{from: firstGroup(from), to: firstGroup(to)}
	e := c.latestChange.Load()
	if e == nil || e.key != key {
		e = c.change(key)
	}
	if e != nil && !ownedBy(e.addressees, viewer) {
		if e.whole {
			c.bellEvent(buf, viewerJSON, viewer, to)
			return
		}
		buf.WriteString("event: change\ndata: {\"viewer\":")
		buf.WriteString(viewerJSON)
		buf.Write(e.rest)
		return
	}
	put, remove := diff(from, to)
	whole := len(put)+len(remove) >= max(to.Len(), 1)
	var rest []byte
	if whole {
		c.bellEvent(buf, viewerJSON, viewer, to)
	} else {
		buf.WriteString("event: change\ndata: {\"viewer\":")
		buf.WriteString(viewerJSON)
		start := buf.Len()
		c.changeRest(buf, viewer, to, put, remove)
		rest = buf.Bytes()[start:]
	}
	if e != nil || key.to == nil || ownAny(viewer, to.Groups) || len(rest) > frameCacheBytes {
		return // a state of the viewer's own, not shared; empty (cheap); or too large to keep
	}
	e = &sharedChange{key: key, addressees: addresseesOf(to.Groups), whole: whole, rest: bytes.Clone(rest)}
	e.size = len(e.rest) + 64 + stateBytes(from) + stateBytes(to)
	c.mu.Lock()
	if len(c.changes) == maxChanges {
		c.dropChange()
	}
	c.changes = append(c.changes, e)
	c.changeBytes += e.size
	for len(c.changes) > 1 && c.changeBytes > frameCacheBytes {
		c.dropChange()
	}
	c.mu.Unlock()
	c.latestChange.Store(e)
}

// change returns the kept change named key, or nil.
func (c *frameCache) change(key changeKey) *sharedChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.changes) - 1; i >= 0; i-- { // newest first
		if c.changes[i].key == key {
			return c.changes[i]
		}
	}
	return nil
}

// dropChange drops the oldest kept change; c.mu is held.
func (c *frameCache) dropChange() {
	c.changeBytes -= c.changes[0].size
	n := copy(c.changes, c.changes[1:])
	c.changes[n] = nil // not held alive by the slice's spare capacity
	c.changes = c.changes[:n]
}

// changeRest appends a change event's data from its unread count on.
func (c *frameCache) changeRest(buf *bytes.Buffer, viewer string, to notifications.BellState, put []notifications.Notification, remove []notifications.Notification) {
	buf.WriteString(`,"unread":`)
	buf.WriteString(strconv.Itoa(to.Unread))
	buf.WriteString(`,"count":`)
	buf.WriteString(strconv.Itoa(to.Len()))
	buf.WriteString(`,"put":[`)
	for i, n := range put {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(c.item(n, mesh.EqualNames(n.Addressee, viewer)))
	}
	buf.WriteString(`],"remove":[`)
	for i, n := range remove {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"addressee":`)
		writeString(buf, n.Addressee)
		buf.WriteString(`,"id":`)
		writeString(buf, n.ID)
		buf.WriteByte('}')
	}
	buf.WriteString("]}\n\n")
}

// notificationKey names a notification in a state: its addressee (ASCII
// case folded: mesh.FoldName) and id.
type notificationKey struct{ addressee, id string }

func keyOf(n notifications.Notification) notificationKey {
	return notificationKey{addressee: mesh.FoldName(n.Addressee), id: n.ID}
}

// diff returns the notifications of to that from does not hold as they
// are (put, in to's order) and those of from that to does not hold
// (remove).
func diff(from, to notifications.BellState) (put, remove []notifications.Notification) {
	had := make(map[notificationKey]notifications.Notification, from.Len())
	for _, g := range from.Groups {
		for _, n := range g.Items {
			had[keyOf(n)] = n
		}
	}
	for _, g := range to.Groups {
		for _, n := range g.Items {
			k := keyOf(n)
			if old, ok := had[k]; !ok || old != n {
				put = append(put, n)
			}
			delete(had, k)
		}
	}
	for _, g := range from.Groups { // in from's order: the same event for the same change
		for _, n := range g.Items {
			if _, ok := had[keyOf(n)]; ok {
				remove = append(remove, n)
			}
		}
	}
	return put, remove
}

// ownedBy reports whether viewer is among addressees.
func ownedBy(addressees []string, viewer string) bool {
	for _, a := range addressees {
		if mesh.EqualNames(a, viewer) {
			return true
		}
	}
	return false
}
