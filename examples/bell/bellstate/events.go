package bellstate

import (
	"bytes"
	"fmt"
)

// Splitter splits a stream's bytes, as they are read, into events: each
// ends with an empty line ("\n\n", as the bell writes them); a CR ending
// a line is dropped. It is not safe for concurrent use.
type Splitter struct {
	rest []byte // the start of an event not yet whole
}

// maxEvent bounds an event's size (the bell's largest are a whole state
// of a few hundred notifications, well below it).
const maxEvent = 16 << 20

// Feed splits the events that data completes and hands each to fn, in
// order; an Event's Data is valid only until fn returns. It stops at fn's
// first error and returns it.
func (p *Splitter) Feed(data []byte, fn func(Event) error) error {
	if len(p.rest) > 0 {
		data = append(p.rest, data...)
	}
	for {
		i := bytes.Index(data, []byte("\n\n"))
		if i < 0 {
			break
		}
		block := data[:i]
		data = data[i+2:]
		if err := fn(parse(block)); err != nil {
			p.rest = p.rest[:0]
			return err
		}
	}
	if len(data) > maxEvent {
		p.rest = nil
		return fmt.Errorf("bellstate: an event of more than %d bytes", maxEvent)
	}
	p.rest = append(p.rest[:0], data...) // may overlap data: copy moves
	return nil
}

// parse reads one event's lines ("field: value"; data lines are joined by
// newlines, as EventSource joins them).
func parse(block []byte) Event {
	var ev Event
	data := 0
	for len(block) > 0 {
		line := block
		if i := bytes.IndexByte(block, '\n'); i >= 0 {
			line, block = block[:i], block[i+1:]
		} else {
			block = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Name = eventName(value)
		case "id":
			ev.ID = string(value)
		case "data":
			if data > 0 {
				ev.Data = append(append(bytes.Clone(ev.Data), '\n'), value...)
			} else {
				ev.Data = value
			}
			data++
		}
	}
	if ev.Name == "" {
		ev.Name = "message"
	}
	return ev
}

// eventName returns name as a string, the bell's own names without
// allocating (a broadcast is an event on each of thousands of streams).
func eventName(name []byte) string {
	for _, known := range [...]string{"change", "bell", "hello", "failure"} {
		if string(name) == known {
			return known
		}
	}
	return string(name)
}
