package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/meshrx/meshrx/examples/bell/bellstate"
	"github.com/meshrx/meshrx/notifications"
)

// Every kept change's key holds its two whole states alive, so the change
// cache bounds what they weigh as well as their encodings: after 1024
// broadcasts of one changed notification each, the states reachable only
// through the cache fit in its byte bound. Negative control: the cache
// before this fix (a map of up to 1024 changes bounded by their encodings'
// bytes alone) kept all 1024 states alive (≈ 51 MB) and failed here.
func TestTheChangeCacheDoesNotPinWholeStatesBeyondItsByteBound(t *testing.T) {
	const size = 200 // notifications in the Admin bell
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	base := make([]notifications.Notification, size)
	for i := range base {
		base[i] = notifications.Notification{ID: "n" + strconv.Itoa(i), Title: "t", Addressee: notifications.Admin,
			CreatedAt: at.Add(-time.Duration(i) * time.Second), Type: notifications.General}
	}
	mk := func(k int) notifications.BellState {
		items := append([]notifications.Notification(nil), base...)
		items[0].Title = "broadcast " + strconv.Itoa(k) // one change per broadcast
		return notifications.BellState{Groups: []notifications.Group{{Items: items}}, Unread: size}
	}
	var cache frameCache
	var refs []weak.Pointer[notifications.Group]
	prev := mk(0)
	for k := 1; k <= maxChanges; k++ {
		next := mk(k)
		var buf bytes.Buffer
		cache.changeEvent(&buf, `"ops"`, "ops", prev, next)
		refs = append(refs, weak.Make(&next.Groups[0]))
		prev = next
	}
	prev = notifications.BellState{}
	runtime.GC()
	runtime.GC()
	alive := 0
	for _, r := range refs {
		if r.Value() != nil {
			alive++
		}
	}
	cache.mu.Lock()
	encoded := cache.changeBytes
	cache.mu.Unlock()
	pinned := alive * size * 250 // ≈ bytes of a Notification value
	t.Logf("change encodings counted: %d bytes; states still reachable only through the cache: %d (≈ %d bytes)", encoded, alive, pinned)
	if pinned > frameCacheBytes {
		t.Fatalf("the change cache pins %d whole states (≈ %d bytes) beyond its %d-byte bound", alive, pinned, frameCacheBytes)
	}
}

// Streams of several viewers (some owning notifications of the shared
// states, some not; some skipping states, as a stream whose pending state
// was replaced does) apply the same chain of shared states through one
// cache at once: each ends with exactly what the whole state shows it.
// Negative control: naming a change by the state after it alone (dropping
// from from changeKey) gives a skipping stream the change of a stream
// that did not skip, and this fails.
func TestConcurrentStreamsSkippingStatesApplySharedChangesCorrectly(t *testing.T) {
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	var chain []notifications.BellState
	var items []notifications.Notification
	for k := 0; k < 40; k++ {
		addr := notifications.Admin
		if k%5 == 0 {
			addr = "root"
		}
		items = append([]notifications.Notification{{ID: "n" + strconv.Itoa(k), Title: "t" + strconv.Itoa(k),
			Addressee: addr, CreatedAt: at.Add(time.Duration(k) * time.Second), Type: notifications.General}}, items...)
		if k%7 == 3 && len(items) > 3 {
			items = append(items[:1], items[2:]...) // one gone
		}
		var st notifications.BellState
		st.Groups = []notifications.Group{{Items: append([]notifications.Notification(nil), items...)}}
		st.Unread = len(items)
		chain = append(chain, st)
	}
	var cache frameCache
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 16; g++ {
		viewer := []string{"ops", "root", "Root", "dev"}[g%4]
		step := 1 + g%3
		wg.Add(1)
		go func() {
			defer wg.Done()
			var client bellstate.State
			var shown notifications.BellState
			seq := 0
			for i := 0; i < len(chain); i += step {
				st := chain[i]
				seq++
				var buf bytes.Buffer
				buf.WriteString("id: " + strconv.Itoa(seq) + "\n")
				if seq == 1 {
					cache.bellEvent(&buf, jsonString(viewer), viewer, st)
				} else {
					cache.changeEvent(&buf, jsonString(viewer), viewer, shown, st)
				}
				shown = st
				var sp bellstate.Splitter
				_ = sp.Feed(buf.Bytes(), func(ev bellstate.Event) error {
					ev.Data = bytes.Clone(ev.Data)
					if err := client.Apply(ev, nil); err != nil {
						errs <- viewer + ": " + err.Error()
					}
					return nil
				})
				got, _ := json.Marshal(viewFrom(viewer, &client))
				want, _ := json.Marshal(viewOf(viewer, st))
				if string(got) != string(want) {
					errs <- viewer + " after state " + strconv.Itoa(i) + ": differs from the whole state"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
