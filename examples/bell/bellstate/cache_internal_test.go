package bellstate

import (
	"strconv"
	"strings"
	"testing"
)

// The cache's keys are whole encodings (a state's up to 16 MB), so it is
// bounded by their bytes as well as their count: after 24 distinct 1 MB
// states, what each part keeps fits in cacheBytes. Negative control: the
// cache bounded by count alone (4096 entries) kept all 24 MB of states
// and 24 MB of notifications, and this failed.
func TestTheCacheKeepsNoMoreThanItsBytesOfEncodings(t *testing.T) {
	var c Cache
	big := strings.Repeat("x", 1<<20)
	for i := range 24 {
		rest := `,"unread":1,"groups":[{"source":"s","items":[{"id":"n` + strconv.Itoa(i) + `","title":"` + big + `"}]}]}`
		if _, err := c.whole([]byte(rest)); err != nil {
			t.Fatal(err)
		}
	}
	sum := func(keys []string) int {
		n := 0
		for _, k := range keys {
			n += len(k)
		}
		return n
	}
	var wholes, items []string
	for k := range c.wholes {
		wholes = append(wholes, k)
	}
	for k := range c.items {
		items = append(items, k)
	}
	if w, it := sum(wholes), sum(items); w > cacheBytes || it > cacheBytes {
		t.Fatalf("the cache keeps %d bytes of states and %d of notifications; its bound is %d each", w, it, cacheBytes)
	}
	if len(c.wholes) == 0 {
		t.Fatal("the cache keeps no state at all: nothing would be shared")
	}
	if _, err := c.whole([]byte(`,"unread":0,"groups":[{"source":"s","items":[{"id":"` + big + big + big + big + big + big + big + big + `"}]}]}`)); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.items[`{"id":"`+strings.Repeat(big, 8)+`"}`]; ok {
		t.Fatal("a notification larger than the bound was kept")
	}
}
