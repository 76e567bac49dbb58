package testkit

import (
	"bytes"
	"context"
	"strings"
	"sync"
)

// CancelOn is a writer that keeps what is written and calls Cancel once it
// contains Marker: a test interrupts a program at a point its output names.
type CancelOn struct {
	Marker string
	Cancel context.CancelFunc

	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *CancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.Marker) {
		c.Cancel()
	}
	return len(p), nil
}

// String returns what has been written.
func (c *CancelOn) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
