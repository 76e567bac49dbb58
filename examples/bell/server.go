package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meshrx/meshrx/internal/answer"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

//go:embed static/index.html
var indexHTML string

// Bounds of the HTTP handlers' own waits.
const (
	eventWriteBudget = 10 * time.Second // one event reaching a slow client
	actionBudget     = 20 * time.Second // one send or mark-read
)

// server is the bell page's HTTP handler.
type server struct {
	svc *notifications.Service
	log *slog.Logger
	mux *http.ServeMux

	pageLoads atomic.Int64 // GET / served: lets a test tell a live update from a reload
}

func newServer(svc *notifications.Service, logger *slog.Logger) *server {
	s := &server{svc: svc, log: logger, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /events", s.events)
	s.mux.HandleFunc("POST /send", s.send)
	s.mux.HandleFunc("POST /read", s.read)
	return s
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *server) index(w http.ResponseWriter, _ *http.Request) {
	s.pageLoads.Add(1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, indexHTML)
}

// viewerOf returns the viewer a request names, which must be exactly one
// partition segment.
func viewerOf(r *http.Request) (string, bool) {
	v := strings.TrimSpace(r.FormValue("viewer"))
	a, ok := notifications.ResolveAddressee(v)
	return v, ok && a == v
}

// events streams the viewer's bell as Server-Sent Events: a "bell" event with
// the whole state after every change, a "failure" event if the bell fails (not "error", which EventSource uses
// for its own connection errors). The
// stream ends when the client goes away or the server shuts down.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	viewer, ok := viewerOf(r)
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("viewer %q is not a user name", viewer))
		return
	}
	box := newMailbox()
	sub := s.svc.Bell(viewer).Subscribe(rx.NewObserver(box.put, box.fail, box.complete))
	defer sub.Unsubscribe()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(event string, v any) bool {
		data, err := json.Marshal(v)
		if err != nil {
			s.log.Error("bell: encoding an event", "err", err)
			return false
		}
		// A client that stops reading must not hold the handler forever.
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteBudget))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("hello", map[string]string{"viewer": viewer}) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-box.ready:
		}
		st, err, done := box.take()
		if st != nil && !send("bell", viewOf(viewer, *st)) {
			return
		}
		if err != nil {
			s.log.Warn("bell: stream failed", "viewer", viewer, "err", err)
			send("failure", map[string]string{"error": err.Error()})
			return
		}
		if done {
			return
		}
	}
}

// mailbox hands the latest bell state from the bell's goroutine to the
// handler's: every state is complete, so an older one not yet sent is
// replaced rather than queued, and a slow client never makes the bell wait.
type mailbox struct {
	ready chan struct{} // has a value when something is waiting

	mu    sync.Mutex
	state *notifications.BellState
	err   error
	done  bool
}

func newMailbox() *mailbox { return &mailbox{ready: make(chan struct{}, 1)} }

func (m *mailbox) poke() {
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

func (m *mailbox) put(st notifications.BellState) {
	m.mu.Lock()
	m.state = &st
	m.mu.Unlock()
	m.poke()
}

func (m *mailbox) fail(err error) {
	m.mu.Lock()
	m.err, m.done = err, true
	m.mu.Unlock()
	m.poke()
}

func (m *mailbox) complete() {
	m.mu.Lock()
	m.done = true
	m.mu.Unlock()
	m.poke()
}

func (m *mailbox) take() (*notifications.BellState, error, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.state
	m.state = nil
	return st, m.err, m.done
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
	Own       bool   `json:"own"` // the viewer's own: it can be marked read
}

func viewOf(viewer string, st notifications.BellState) bellView {
	v := bellView{Viewer: viewer, Unread: st.Unread, Groups: make([]groupView, 0, len(st.Groups))}
	for _, g := range st.Groups {
		gv := groupView{Source: g.Source, Items: make([]itemView, 0, len(g.Items))}
		for _, n := range g.Items {
			gv.Items = append(gv.Items, itemView{Notification: n, Addressee: n.Addressee,
				Own: strings.EqualFold(n.Addressee, viewer)})
		}
		v.Groups = append(v.Groups, gv)
	}
	return v
}

// send creates a notification from the form fields to, title, message, type
// and target, and answers with where it was delivered.
func (s *server) send(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), actionBudget)
	defer cancel()
	n := notifications.Notification{
		Title:      r.FormValue("title"),
		Message:    r.FormValue("message"),
		Type:       notifications.Type(r.FormValue("type")),
		TargetPath: strings.TrimSpace(r.FormValue("target")),
		CreatedBy:  strings.TrimSpace(r.FormValue("from")),
		Icon:       r.FormValue("icon"),
	}
	var to []string
	for _, recipient := range strings.Split(r.FormValue("to"), ",") {
		if recipient = strings.TrimSpace(recipient); recipient != "" {
			to = append(to, recipient)
		}
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

// read marks the viewer's notification id as read.
func (s *server) read(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), actionBudget)
	defer cancel()
	viewer, ok := viewerOf(r)
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("viewer %q is not a user name", viewer))
		return
	}
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
	status := http.StatusInternalServerError
	switch {
	case errors.As(err, &invalid):
		status = http.StatusBadRequest
	case errors.As(err, &notFound):
		status = http.StatusNotFound
	case mesh.IsUnavailable(err), errors.Is(err, context.DeadlineExceeded):
		status = http.StatusServiceUnavailable
		answer.SetRetryAfter(w.Header(), 0)
	}
	if status >= 500 {
		s.log.Warn("bell: "+what+" failed", "err", err)
	}
	body := map[string]any{"error": err.Error()}
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
