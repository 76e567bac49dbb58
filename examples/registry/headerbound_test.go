package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request whose headers exceed maxHeaderBytes is refused with a 431 by
// both of the registry's servers (the API and the metrics listener), before
// any handler reads it; one a little under the bound is served.
//
// Negative control, run by hand: without MaxHeaderBytes the 100 KiB
// header was read (net/http's default is 1 MiB) and answered (404 by the
// API, 200 by the metrics handler).
func TestARequestWithHeadersBeyondTheBoundIsRefusedUnread(t *testing.T) {
	s := start(t, hooks{})
	for _, url := range []string{s.url + "/v1/index", s.metrics} {
		for _, c := range []struct {
			size int
			want func(int) bool
		}{
			{100 << 10, func(code int) bool { return code == http.StatusRequestHeaderFieldsTooLarge }},
			{maxHeaderBytes / 2, func(code int) bool { return code != http.StatusRequestHeaderFieldsTooLarge }},
		} {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			require.NoError(t, err)
			req.Header.Set("X-Padding", strings.Repeat("a", c.size))
			resp, err := s.client.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.True(t, c.want(resp.StatusCode), "%s with %d header bytes: %d", url, c.size, resp.StatusCode)
		}
	}
}
