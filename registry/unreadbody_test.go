package registry

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/client"
)

// Every route's own answer to such a request is a rule of the route table
// (ruleUnreadBody); these are the answers no route's handler gives: the
// mux's, and publishing's refusals before it reads the upload.
func TestARequestDeclaringABodyItNeverSendsIsAnsweredAtOnceAndItsConnectionClosedWhenRefusedOrRedirected(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	key := f.instance("acme", "pro", "Plugins/*")
	f.publish("Acme.Crm", "1.0.0", "")
	publish := func(query, token string) string {
		return fmt.Sprintf("POST %s/Acme.New%s HTTP/1.1\r\nAuthorization: Bearer %s\r\n", client.BundlesPath, query, token)
	}
	cases := []struct {
		name   string
		head   string // request line and headers, without the body's framing
		status int
	}{
		{"index without a key", "GET " + client.IndexPath + " HTTP/1.1\r\n", http.StatusUnauthorized},
		{"download with an unknown key", "GET " + client.BundlesPath + "/Acme.Crm/1.0.0 HTTP/1.1\r\nAuthorization: Bearer " + key + "x\r\n", http.StatusUnauthorized},
		{"a method the route does not have", "PUT " + client.BundlesPath + "/Acme.Crm/1.0.0 HTTP/1.1\r\n", http.StatusMethodNotAllowed},
		{"publish with a wrong token", publish("?version=1.0.0", "wrong"), http.StatusUnauthorized},
		{"publish with a misspelt parameter", publish("?version=1.0.0&Tier=pro", testPublishToken), http.StatusBadRequest},
		{"publish with a bad version", publish("?version=..", testPublishToken), http.StatusBadRequest},
		{"publish to a path that is not clean", "POST " + client.BundlesPath + "//Acme.New?version=1.0.0 HTTP/1.1\r\nAuthorization: Bearer " + testPublishToken + "\r\n", http.StatusTemporaryRedirect},
	}
	// Every request declares a body and sends none of it: a client that
	// stalled, or one holding connections on purpose. The server behind
	// httptest has no ReadTimeout, as a zero http.Server has none.
	type sent struct {
		conn net.Conn
		br   *bufio.Reader
	}
	var conns []sent
	for i, c := range cases {
		conn, err := net.Dial("tcp", f.http.Listener.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		framing := "Content-Length: 100\r\n"
		if i%2 == 1 {
			framing = "Transfer-Encoding: chunked\r\n"
		}
		_, err = io.WriteString(conn, c.head+"Host: registry.test\r\n"+framing+"\r\n")
		require.NoError(t, err)
		conns = append(conns, sent{conn, bufio.NewReader(conn)})
	}
	// A ceiling for a stuck test, not a delay a passing one spends.
	ceiling := time.Now().Add(testkit.Bound)
	for i, c := range cases {
		require.NoError(t, conns[i].conn.SetReadDeadline(ceiling))
		resp, err := http.ReadResponse(conns[i].br, nil)
		if !assert.NoError(t, err, "%s: answered without waiting for the body", c.name) {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, c.status, resp.StatusCode, c.name)
		assert.True(t, resp.Close, "%s: the answer says the connection closes", c.name)
		_, err = conns[i].br.ReadByte()
		assert.ErrorIs(t, err, io.EOF, "%s: and the server closes it (after answer.UnreadBodyGrace) rather than wait for the body", c.name)
	}
	assert.NotContains(t, f.activation(), "Acme.New")

	// A publication whose upload is read keeps its connection.
	conn, err := net.Dial("tcp", f.http.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(testkit.Bound))) // a ceiling, as above
	req, err := http.NewRequest(http.MethodPost, f.http.URL+client.BundlesPath+"/Acme.New?version=1.0.0",
		bytes.NewReader(testkit.ModuleArchive(t, "Acme.New", "1.0.0", 1)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testPublishToken)
	require.NoError(t, req.Write(conn))
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.False(t, resp.Close, "the upload was read: the connection is kept")
	// Negative control (run): without closeUnread, no answer came before the
	// ceiling in any case; with closeUnread applied by the route the mux
	// matched, the redirect of a publication to its clean path (matched as
	// the publish route) still waited; without readingBody the publication
	// above closed its connection. net/http reads what is left of a body the handler
	// did not read before it sends the answer, to reuse the connection, so a
	// 401 waited for the server's ReadTimeout (90 s in examples/registry,
	// past every route's budget; none here) and held the connection slot.
}
