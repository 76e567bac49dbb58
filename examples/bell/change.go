package main

import (
	"bytes"
	"strconv"
	"strings"

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
// for an empty state), as frameCache.states names a state.
type changeKey struct{ from, to *notifications.Group }

// sharedChange is a change's encoding from its unread count to the end of
// its event, as every stream that owns none of its state's notifications
// shows it; or whole, when the change is no smaller than the state.
type sharedChange struct {
	key        changeKey
	addressees []string // of the state after it: a viewer among them owns some
	whole      bool     // send the state whole instead
	rest       []byte
}

// maxChanges bounds how many change encodings frameCache keeps.
const maxChanges = 1024

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
		c.mu.Lock()
		e = c.changes[key]
		c.mu.Unlock()
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
	size := len(e.rest) + 64
	c.mu.Lock()
	if c.changes == nil || c.changeBytes+size > frameCacheBytes || len(c.changes) >= maxChanges {
		c.changes, c.changeBytes = make(map[changeKey]*sharedChange), 0
	}
	c.changes[key] = e
	c.changeBytes += size
	c.mu.Unlock()
	c.latestChange.Store(e)
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
		buf.Write(c.item(n, strings.EqualFold(n.Addressee, viewer)))
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

// notificationKey names a notification in a state: its addressee (without
// case) and id.
type notificationKey struct{ addressee, id string }

func keyOf(n notifications.Notification) notificationKey {
	return notificationKey{addressee: strings.ToLower(n.Addressee), id: n.ID}
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
		if strings.EqualFold(a, viewer) {
			return true
		}
	}
	return false
}
