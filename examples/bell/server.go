package main

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/notifications"
)

// maxWriterBuffer bounds the buffer a writer keeps between events.
const maxWriterBuffer = 256 << 10

//go:embed static/index.html
var indexHTML string

// Bounds of the HTTP handlers' own waits.
const (
	eventWriteBudget = 10 * time.Second // a slow client's socket taking nothing of an event (then its stream is reset)
	eventRestBudget  = 60 * time.Second // a slow client's socket taking all of one event's rest, however it trickles
	writeAtOnce      = time.Millisecond // a writer's wait on one stream's socket before it hands the rest to the stream
	actionBudget     = 20 * time.Second // one send or mark-read
)

// limits are the bell server's bounds on what clients may hold and ask.
type limits struct {
	streams          int           // event streams open at once, in all
	streamsPerViewer int           // event streams one viewer may hold open
	recipients       int           // recipients one /send may name
	conns            int           // connections open at once (registry.LimitConnections)
	readHeader       time.Duration // a request's headers must arrive within this
	headerBytes      int           // a request's headers are at most this large (431 beyond)
	read             time.Duration // a request, headers and body, must arrive within this (an event stream's connection is taken over at its headers)
	idle             time.Duration // an idle keep-alive connection is closed after this
	write            time.Duration // a response, from its request's headers on, must be written within this (not an event stream's)
}

// defaultLimits are the example's bounds.
func defaultLimits() limits {
	return limits{streams: 256, streamsPerViewer: 8, recipients: 8, conns: 512, headerBytes: 64 << 10, readHeader: 5 * time.Second, idle: 30 * time.Second,
		read:  5*time.Second + formReadBudget,                 // the headers, then a form's arrival
		write: formReadBudget + actionBudget + 10*time.Second} // a form's arrival and its action come first
}

// server is the bell page's HTTP handler.
type server struct {
	svc      *notifications.Service
	accounts *accounts
	lim      limits
	log      *slog.Logger
	mux      *http.ServeMux

	pageLoads atomic.Int64 // GET / served: lets a test tell a live update from a reload

	frames frameCache // the bell events' encodings, shared by the streams

	writeEach bool // -write-each: a write per stream, no io_uring batches (set before the first stream)

	mu      sync.Mutex
	open    int            // event streams open
	viewers map[string]int // event streams open per viewer
	streams map[*eventStream]struct{}
	writers *writers // started with the first stream, stopped by closeStreams
	closing bool     // closeStreams was called: no stream starts any more
}

func newServer(svc *notifications.Service, accts *accounts, logger *slog.Logger) *server {
	s := &server{svc: svc, accounts: accts, lim: defaultLimits(), log: logger, mux: http.NewServeMux(),
		viewers: map[string]int{}, streams: map[*eventStream]struct{}{}}
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /login", s.login)
	s.mux.HandleFunc("GET /whoami", s.whoami)
	s.mux.HandleFunc("GET /events", s.signedIn(s.events))
	s.mux.HandleFunc("POST /send", s.signedIn(s.send))
	s.mux.HandleFunc("POST /read", s.signedIn(s.read))
	return s
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

// index serves the page with a Content-Security-Policy that runs only its
// own inline script and style (by a nonce made per response), connects
// only to this server, and lets no site frame it.
func (s *server) index(w http.ResponseWriter, _ *http.Request) {
	s.pageLoads.Add(1)
	var b [18]byte
	_, _ = rand.Read(b[:])
	nonce := base64.StdEncoding.EncodeToString(b[:])
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+"'; "+
		"connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	page := strings.Replace(indexHTML, "<script>", `<script nonce="`+nonce+`">`, 1)
	page = strings.Replace(page, "<style>", `<style nonce="`+nonce+`">`, 1)
	_, _ = io.WriteString(w, page)
}

// takeStream takes one of the event-stream slots for viewer, or reports
// that the caps are reached.
func (s *server) takeStream(viewer string) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.open >= s.lim.streams || s.viewers[viewer] >= s.lim.streamsPerViewer {
		return nil, false
	}
	s.open++
	s.viewers[viewer]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.open--
			if s.viewers[viewer]--; s.viewers[viewer] == 0 {
				delete(s.viewers, viewer)
			}
		})
	}, true
}

// track records es among the open streams and gives it the writers,
// unless the server is closing them.
func (s *server) track(es *eventStream) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	if s.writers == nil {
		var clk clock.Clock // nil: the ring's default, the real clock
		if s.svc != nil {
			clk = s.svc.Clock
		}
		s.writers = startWriters(s.lim.streams, s.log, !s.writeEach, clk)
	}
	es.w = s.writers
	s.streams[es] = struct{}{}
	return true
}

func (s *server) untrack(es *eventStream) {
	s.mu.Lock()
	delete(s.streams, es)
	s.mu.Unlock()
}

// closeStreams ends every open event stream and refuses new ones: they
// would never end by themselves, and net/http's Shutdown does not see
// connections taken over from it.
func (s *server) closeStreams() {
	s.mu.Lock()
	s.closing = true
	open := make([]*eventStream, 0, len(s.streams))
	for es := range s.streams {
		open = append(open, es)
	}
	w := s.writers
	s.writers = nil
	s.mu.Unlock()
	for _, es := range open {
		es.close()
	}
	if w != nil {
		w.close() // no stream is left to write
	}
}

// events streams the viewer's bell as Server-Sent Events: a "hello"
// event, a "bell" event with the whole state, then after every change a
// "change" event with what changed (see change.go; each with the stream's
// sequence number as its id, so a client can tell it missed one and
// reconnect), and a "failure" event if the bell fails (not "error", which
// EventSource uses for its own connection errors). Every stream starts
// with the whole state, whatever Last-Event-ID says. The stream ends when
// the client goes away or the server shuts down.
//
// It streams the signed-in viewer's own bell only, within the stream caps
// (limits.streams in all, limits.streamsPerViewer each): beyond them it
// answers 503 with Retry-After. The connection is taken over from net/http
// and served by an eventStream, so that an idle stream costs little memory.
func (s *server) events(w http.ResponseWriter, r *http.Request, viewer string) {
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		return
	}
	release, ok := s.takeStream(viewer)
	if !ok {
		answer.SetRetryAfter(w.Header(), 0)
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("too many open event streams (at most %d in all, %d per viewer); close one or retry later",
			s.lim.streams, s.lim.streamsPerViewer))
		return
	}
	if r.ProtoMajor != 1 {
		release()
		writeError(w, http.StatusHTTPVersionNotSupported, "event streams are served over HTTP/1.1")
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		release()
		s.log.Error("bell: taking over an event stream's connection", "err", err)
		writeError(w, http.StatusInternalServerError, "events: failed")
		return
	}
	s.startStream(conn, w.Header(), viewer, release)
}

// bellView is the JSON the page renders.
type bellView struct {
	Viewer string      `json:"viewer"`
	Unread int         `json:"unread"`
	Groups []groupView `json:"groups"`
}

type groupView struct {
	Source string     `json:"source"`
	Items  []itemView `json:"items"`
}

type itemView struct {
	notifications.Notification
	Addressee string `json:"addressee"`
	Own       bool   `json:"own"`    // the viewer's own: it can be marked read
	Source    string `json:"source"` // what it is about: the group it belongs to
}

func viewOf(viewer string, st notifications.BellState) bellView {
	v := bellView{Viewer: viewer, Unread: st.Unread, Groups: make([]groupView, 0, len(st.Groups))}
	for _, g := range st.Groups {
		gv := groupView{Source: g.Source, Items: make([]itemView, 0, len(g.Items))}
		for _, n := range g.Items {
			gv.Items = append(gv.Items, itemView{Notification: n, Addressee: n.Addressee,
				Own: mesh.EqualNames(n.Addressee, viewer), Source: n.Source()})
		}
		v.Groups = append(v.Groups, gv)
	}
	return v
}

// send creates a notification from the form fields to (each one a
// comma-separated list, and every one counts), title, message, type and
// target, sent by the signed-in user, and answers with where it was
// delivered. It names at most limits.recipients recipients, each one of the
// example's users: a notification to anyone else would create a partition
// per request for a user who does not exist.
func (s *server) send(w http.ResponseWriter, r *http.Request, sender string) {
	ctx, cancel := context.WithTimeout(r.Context(), actionBudget)
	defer cancel()
	if from := strings.TrimSpace(r.FormValue("from")); from != "" && from != sender {
		writeError(w, http.StatusForbidden, fmt.Sprintf("signed in as %s: a notification is sent by the signed-in user", sender))
		return
	}
	n := notifications.Notification{
		Title:      r.FormValue("title"),
		Message:    r.FormValue("message"),
		Type:       notifications.Type(r.FormValue("type")),
		TargetPath: strings.TrimSpace(r.FormValue("target")),
		CreatedBy:  sender,
		Icon:       r.FormValue("icon"),
	}
	var to []string
	for _, recipient := range strings.Split(strings.Join(r.Form["to"], ","), ",") { // every "to" field
		recipient = strings.TrimSpace(recipient)
		if recipient == "" {
			continue
		}
		if len(to) == s.lim.recipients {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid recipients: at most %d per notification", s.lim.recipients))
			return
		}
		if mesh.EqualNames(recipient, notifications.Admin) {
			// The Admin notifications: addressed by a global admin only.
			if s.svc.Admins == nil || !s.svc.Admins.IsGlobalAdmin(ctx, sender).Allows() {
				writeError(w, http.StatusForbidden, fmt.Sprintf("signed in as %s: only a global admin sends to %s", sender, notifications.Admin))
				return
			}
			if !slices.Contains(to, notifications.Admin) {
				to = append(to, notifications.Admin)
			}
			continue
		}
		user, ok := s.accounts.known(recipient)
		if !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid recipient %q: not a user of this bell (%s)", recipient, s.accounts.sample(10)))
			return
		}
		if !slices.Contains(to, user) {
			to = append(to, user)
		}
	}
	if len(to) == 0 {
		writeError(w, http.StatusBadRequest, "invalid recipients: name at least one user")
		return
	}
	nodes, err := s.svc.Create(ctx, n, to...)
	delivered := make([]string, 0, len(nodes))
	for _, node := range nodes {
		delivered = append(delivered, node.Path)
	}
	if err != nil {
		s.failed(w, "send", err, map[string]any{"delivered": delivered})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"delivered": delivered})
}

// read marks the signed-in viewer's notification id as read: 204, or 404
// when the viewer has none such, 409 when another writer kept changing it
// meanwhile (retry), 503 with Retry-After when the store could not tell.
func (s *server) read(w http.ResponseWriter, r *http.Request, viewer string) {
	ctx, cancel := context.WithTimeout(r.Context(), actionBudget)
	defer cancel()
	if err := s.svc.MarkRead(ctx, viewer, r.FormValue("id")); err != nil {
		s.failed(w, "mark read", err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// failed answers an error with the status that says whose it is.
func (s *server) failed(w http.ResponseWriter, what string, err error, extra map[string]any) {
	var invalid *notifications.InvalidError
	var notFound *notifications.NotFoundError
	var conflict *mesh.VersionConflictError
	status := http.StatusInternalServerError
	switch {
	case errors.As(err, &invalid):
		status = http.StatusBadRequest
	case errors.As(err, &notFound):
		status = http.StatusNotFound
	case errors.As(err, &conflict):
		// Another writer kept changing it (MarkRead retries a few times):
		// nothing failed here, and the client may try again.
		status = http.StatusConflict
	case mesh.IsUnavailable(err), errors.Is(err, context.DeadlineExceeded):
		status = http.StatusServiceUnavailable
		answer.SetRetryAfter(w.Header(), 0)
	}
	msg := err.Error() // the caller's own mistake is told in full
	if status >= 500 {
		// Internal text (driver errors, paths) stays in the log.
		s.log.Warn("bell: "+what+" failed", "err", err)
		msg = what + ": failed"
		if status == http.StatusServiceUnavailable {
			msg = what + ": could not find out; retry after the Retry-After delay"
		}
	}
	body := map[string]any{"error": msg}
	for k, v := range extra {
		body[k] = v
	}
	writeJSON(w, status, body)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
