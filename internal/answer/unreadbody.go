package answer

import (
	"net/http"
	"time"
)

// UnreadBodyGrace is how long a connection whose request body is not read
// is still read from after its answer: the body a client is sending is
// drained (up to net/http's 256 KiB) rather than reset under the answer.
const UnreadBodyGrace = time.Second

// CloseUnread makes the answer to a request whose body is not read close
// its connection, and bounds what is still read from it by UnreadBodyGrace;
// a request without a body is left alone. Otherwise net/http, to reuse the
// connection, reads the rest of the body before it sends the answer: a
// client that declares a body and sends none would hold the answer, and a
// connection slot, until the server's ReadTimeout (forever without one),
// past every route's budget.
func CloseUnread(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		return
	}
	w.Header().Set("Connection", "close")
	// Wall time: it bounds blocking reads of the connection. Not every
	// ResponseWriter supports it; "Connection: close" alone still sends
	// the answer before any read.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(UnreadBodyGrace))
}
