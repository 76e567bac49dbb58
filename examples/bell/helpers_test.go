package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/examples/bell/bellstate"
	"github.com/meshrx/meshrx/notifications"
)

// bound limits, in real time, each wait of these tests: a server starting, a
// response, an event. It is a failure bound, never a pause.
const bound = 30 * time.Second

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// urlWriter catches the sign-in links and the "listening on" line run
// prints (the links come first).
type urlWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	found  chan string
	sent   bool
	logins map[string]string // user → sign-in link
}

func (w *urlWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for !w.sent {
		line, rest, ok := strings.Cut(w.buf.String(), "\n")
		if !ok {
			break
		}
		w.buf.Reset()
		w.buf.WriteString(rest)
		if who, link, ok := strings.Cut(strings.TrimPrefix(line, "sign in as "), ": "); ok && strings.HasPrefix(line, "sign in as ") {
			w.logins[who] = link
		}
		if u, ok := strings.CutPrefix(line, "listening on "); ok {
			w.sent = true
			w.found <- u
		}
	}
	return len(p), nil
}

// app is a run of the command in this process.
type app struct {
	url    string
	stop   func() error      // ends the run (as a signal would) and returns its error
	logins map[string]string // user → the sign-in link the run printed
}

// token returns the token run printed for user.
func (a *app) token(t *testing.T, user string) string {
	t.Helper()
	link, ok := a.logins[user]
	require.True(t, ok, "run printed no sign-in link for %s", user)
	u, err := url.Parse(link)
	require.NoError(t, err)
	return u.Query().Get("token")
}

// as returns a client that sends user's token as Authorization: Bearer.
func (a *app) as(t *testing.T, user string) *http.Client {
	t.Helper()
	c := client(t)
	c.Transport = bearer{token: a.token(t, user), next: c.Transport}
	return c
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// startRun starts run(cfg) and waits until it prints its URL. The run is
// stopped when the test ends, if the test has not stopped it.
func startRun(t *testing.T, cfg config) *app {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &urlWriter{found: make(chan string, 1), logins: map[string]string{}}
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, w, discard()) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(bound):
				runErr = errors.New("run did not return within the bound after its context ended")
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	select {
	case u := <-w.found:
		w.mu.Lock()
		defer w.mu.Unlock()
		return &app{url: u, stop: stop, logins: w.logins}
	case err := <-done:
		require.FailNow(t, "run ended before listening", "err: %v", err)
	case <-time.After(bound):
		require.FailNow(t, "run did not print its URL within the bound")
	}
	return nil
}

// client returns an HTTP client whose connections are closed when the test
// ends.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: bound}
}

// post sends a form and returns the status and the decoded JSON body.
func post(t *testing.T, c *http.Client, u string, form url.Values) (int, map[string]any) {
	t.Helper()
	res, err := c.PostForm(u, form)
	require.NoError(t, err)
	defer res.Body.Close()
	body := map[string]any{}
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &body), "body: %s", raw)
	}
	return res.StatusCode, body
}

// event is one Server-Sent Event.
type event struct {
	name string
	data string
	kind string // for "bell": the event as sent, "bell" (whole) or "change"
	id   string
}

// stream reads an event stream.
type stream struct {
	status int
	events chan event // closed when the stream ends
	cancel func()
}

// openStream opens GET u and reads its events until the stream ends or the
// test does. It applies the bell's events as a client does
// (bellstate.State) and hands on, for each "bell" or "change" event, a
// "bell" event with the client's whole state after it (the JSON of a
// bellView); one that does not apply ends the stream with an "unapplied"
// event saying why.
func openStream(t *testing.T, c *http.Client, u string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	require.NoError(t, err)
	// The client's overall Timeout would cut a live stream: use one without.
	res, err := (&http.Client{Transport: c.Transport}).Do(req)
	require.NoError(t, err)
	s := &stream{status: res.StatusCode, events: make(chan event, 64), cancel: cancel}
	ended := make(chan struct{})
	t.Cleanup(func() { cancel(); <-ended })
	go func() {
		defer close(ended)
		defer close(s.events)
		defer res.Body.Close()
		var (
			sp    bellstate.Splitter
			state bellstate.State
			buf   = make([]byte, 32<<10)
		)
		emit := func(ev event) error {
			select {
			case s.events <- ev:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		for {
			n, err := res.Body.Read(buf)
			ferr := sp.Feed(buf[:n], func(e bellstate.Event) error {
				if e.Name != "bell" && e.Name != "change" {
					return emit(event{name: e.Name, data: string(e.Data), id: e.ID})
				}
				if err := state.Apply(e, nil); err != nil {
					_ = emit(event{name: "unapplied", data: err.Error(), kind: e.Name, id: e.ID})
					return err
				}
				var head struct{ Viewer string }
				_ = json.Unmarshal(e.Data, &head)
				b, _ := json.Marshal(viewFrom(head.Viewer, &state))
				return emit(event{name: "bell", data: string(b), kind: e.Name, id: e.ID})
			})
			if err != nil || ferr != nil {
				return
			}
		}
	}()
	return s
}

// viewFrom returns the bellView of a client's state.
func viewFrom(viewer string, st *bellstate.State) bellView {
	v := bellView{Viewer: viewer, Unread: st.Unread(), Groups: []groupView{}}
	for _, g := range st.Groups() {
		gv := groupView{Source: g.Source, Items: make([]itemView, 0, len(g.Items))}
		for _, it := range g.Items {
			gv.Items = append(gv.Items, itemView{Notification: notifications.Notification{
				ID: it.ID, Title: it.Title, Message: it.Message, Icon: it.Icon, TargetPath: it.TargetPath,
				Recipient: it.Recipient, Type: notifications.Type(it.Type), CreatedBy: it.CreatedBy,
				CreatedAt: it.CreatedAt, IsRead: it.IsRead, MovedFrom: it.MovedFrom,
			}, Addressee: it.Addressee, Own: it.Own, Source: it.Source})
		}
		v.Groups = append(v.Groups, gv)
	}
	return v
}

// next returns the next event named name whose data satisfies pred, skipping
// others. It fails the test when the stream ends or the bound passes first.
func (s *stream) next(t *testing.T, name string, pred func(data string) bool) event {
	t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				require.FailNow(t, "the stream ended before a matching "+name+" event")
			}
			if ev.name == name && pred(ev.data) {
				return ev
			}
		case <-deadline.C:
			require.FailNow(t, "no matching "+name+" event within the bound")
		}
	}
}

// ended waits for the stream to end.
func (s *stream) ended(t *testing.T) {
	t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-deadline.C:
			require.FailNow(t, "the stream did not end within the bound")
		}
	}
}

// decodeBell decodes a bell event.
func decodeBell(t *testing.T, data string) bellView {
	t.Helper()
	var v bellView
	require.NoError(t, json.Unmarshal([]byte(data), &v), "bell event: %s", data)
	return v
}

// has reports whether a bell event shows a notification titled title.
func has(title string) func(string) bool {
	return func(data string) bool {
		var v bellView
		if json.Unmarshal([]byte(data), &v) != nil {
			return false
		}
		return v.find(title) != nil
	}
}

func (v bellView) find(title string) *itemView {
	for _, g := range v.Groups {
		for i := range g.Items {
			if g.Items[i].Title == title {
				return &g.Items[i]
			}
		}
	}
	return nil
}

func (v bellView) count() int {
	n := 0
	for _, g := range v.Groups {
		n += len(g.Items)
	}
	return n
}
