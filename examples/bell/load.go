package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Opt-in settings for load runs (examples/bellload). Each one is less safe
// than the default, so each is named by what it gives away: generated users
// whose tokens can be written to a file, and raised caps on streams and
// connections. Without the flags the bell is exactly the demo: three users,
// tokens printed, the caps of defaultLimits.

// maxGeneratedUsers bounds -users and -admins together: every user's token
// is compared on each request (accounts.byToken), so the cost of a request
// grows with their number.
const maxGeneratedUsers = 100_000

// maxCap bounds -max-streams, -max-streams-per-viewer and -max-conns: each
// stream and connection holds a file descriptor and memory.
const maxCap = 1 << 20

// loadConfig is what the load-run flags say.
type loadConfig struct {
	users, admins    int    // generated users (user00001…) and global admins (admin00001…)
	tokensFile       string // write every user's token here (mode 0600)
	streams          int    // -max-streams
	streamsPerViewer int    // -max-streams-per-viewer
	conns            int    // -max-conns
	pprof            string // -pprof: a loopback address to serve net/http/pprof on
}

// validate checks the flag values, naming the flag at fault.
func (c loadConfig) validate() error {
	switch {
	case c.users < 0 || c.admins < 0:
		return fmt.Errorf("-users and -admins must not be negative (got %d and %d)", c.users, c.admins)
	case c.users > maxGeneratedUsers-c.admins: // not users+admins, which can wrap negative
		return fmt.Errorf("-users plus -admins must be at most %d (got %d and %d)", maxGeneratedUsers, c.users, c.admins)
	case c.streams < 1 || c.streams > maxCap:
		return fmt.Errorf("-max-streams must be between 1 and %d (got %d)", maxCap, c.streams)
	case c.streamsPerViewer < 1 || c.streamsPerViewer > maxCap:
		return fmt.Errorf("-max-streams-per-viewer must be between 1 and %d (got %d)", maxCap, c.streamsPerViewer)
	case c.conns < 1 || c.conns > maxCap:
		return fmt.Errorf("-max-conns must be between 1 and %d (got %d)", maxCap, c.conns)
	case c.conns <= c.streams:
		// A stream holds its connection: with none left over, new
		// clients wait in the backlog, unanswered, not even a 503.
		return fmt.Errorf("-max-conns (%d) must be more than -max-streams (%d): each stream holds a connection, and the page, sends and refusals need some", c.conns, c.streams)
	case c.tokensFile != "" && strings.TrimSpace(c.tokensFile) != c.tokensFile:
		return fmt.Errorf("-tokens %q: the file name has leading or trailing spaces", c.tokensFile)
	case c.pprof != "" && !loopback(c.pprof):
		return fmt.Errorf("-pprof %q: profiles show the server's memory; serve them on a loopback address (127.0.0.1:port)", c.pprof)
	}
	return nil
}

// loopback reports whether addr is host:port with a loopback IP host.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// servePprof serves net/http/pprof on c.pprof, printing where, until
// stop is called; without -pprof it does nothing.
func (c loadConfig) servePprof(stdout io.Writer, logger *slog.Logger) (stop func(), err error) {
	if c.pprof == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", c.pprof)
	if err != nil {
		return nil, fmt.Errorf("-pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	fmt.Fprintf(stdout, "pprof on http://%s/debug/pprof/\n", ln.Addr())
	return func() { _ = srv.Close(); <-done }, nil
}

// limits returns lim with the caps the flags set; a zero (a config not
// made by parseFlags) keeps lim's.
func (c loadConfig) limits(lim limits) limits {
	for _, f := range []struct {
		to   *int
		from int
	}{{&lim.streams, c.streams}, {&lim.streamsPerViewer, c.streamsPerViewer}, {&lim.conns, c.conns}} {
		if f.from > 0 {
			*f.to = f.from
		}
	}
	return lim
}

// generated returns the names of the generated users and admins.
func (c loadConfig) generated() (users, admins []string) {
	for i := 1; i <= c.users; i++ {
		users = append(users, fmt.Sprintf("user%05d", i))
	}
	for i := 1; i <= c.admins; i++ {
		admins = append(admins, fmt.Sprintf("admin%05d", i))
	}
	return users, admins
}

// writeTokens writes "user token" lines for every user to path, readable
// by its owner only (0600): the file is made beside path under a temporary
// name and renamed over it, so an existing file's wider mode never applies
// and a reader never sees half of it.
func writeTokens(path string, a *accounts) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".bell-tokens-*")
	if err != nil {
		return fmt.Errorf("-tokens: %w", err)
	}
	defer os.Remove(f.Name()) // after a successful rename, nothing is there
	var b strings.Builder
	for _, u := range a.users() {
		b.WriteString(u + " " + a.tokens[u] + "\n")
	}
	_, err = f.WriteString(b.String())
	if err == nil {
		err = f.Chmod(0o600)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("-tokens: writing %s: %w", path, err)
	}
	return nil
}
