package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/notifications"
)

// replicaBudget bounds starting a replica (its process listening) and
// tearing one down.
const replicaBudget = 60 * time.Second

// replicaConfig is what every replica shares: one database, one volume.
type replicaConfig struct {
	pgURL     string
	data      string // the module volume's directory
	freshness time.Duration
	token     string // publish token
	logger    *slog.Logger
	stderr    io.Writer // where the replica processes' logs go
	verbose   bool
	noJournal bool     // the replicas do not tail the volume's journal
	volume    string   // the module volume on object storage (an s3:// URL); "": data
	env       []string // added to the replicas' environment (the object store's credentials)
}

// replica is one registry process: this program run again as a replica
// (see child.go), serving the registry as examples/registry does — the
// change feed on, the journal tailed. kill is a real SIGKILL; start brings
// it back on the same address. The run keeps a store of its own per
// replica for what it does "through" that replica besides HTTP (the
// notifications and the live query): those survive a kill.
type replica struct {
	name    string
	cfg     replicaConfig
	control string        // the directory of the replica's control files
	skew    time.Duration // the replica's clock offset, from its next start
	silent  atomic.Bool   // its announcements are made to fail now
	held    atomic.Bool   // the publisher leaves it alone (a fault publishes through it)

	mu      sync.Mutex
	addr    string // host:port, kept across restarts
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	running bool
	store   *pgstore.Store
	notify  *notifications.Service
}

func (r *replica) baseURL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "http://" + r.addr
}

// current returns the store and notification service used through this
// replica while its process runs, or nil.
func (r *replica) current() (*pgstore.Store, *notifications.Service) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return nil, nil
	}
	return r.store, r.notify
}

// setControl creates (on) or removes the control file name of the
// replica's process (see child.go), with content.
func (r *replica) setControl(name string, on bool, content string) error {
	p := filepath.Join(r.control, name)
	if !on {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return os.WriteFile(p, []byte(content), 0o600)
}

// start runs the replica's process and waits until it listens.
func (r *replica) start(ctx context.Context) (err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, replicaBudget)
	defer cancel()
	if r.store == nil {
		store, err := pgstore.Open(ctx, r.cfg.pgURL, pgstore.Options{Logger: r.cfg.logger.With("view", r.name), MaxConns: 4})
		if err != nil {
			return fmt.Errorf("replica %s: %w", r.name, err)
		}
		r.store = store
		r.notify = &notifications.Service{Mesh: store, Retention: 1 << 20, Logger: r.cfg.logger}
	}
	if err := os.MkdirAll(r.control, 0o700); err != nil {
		return err
	}
	addr := r.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	cc, err := json.Marshal(childConfig{Name: r.name, PGURL: r.cfg.pgURL, Data: r.cfg.data, Addr: addr, Token: r.cfg.token,
		Control: r.control, Freshness: r.cfg.freshness, ClockSkew: r.skew, Verbose: r.cfg.verbose, NoJournal: r.cfg.noJournal,
		Volume: r.cfg.volume})
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("replica %s: finding this program to run it again: %w", r.name, err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), r.cfg.env...), childEnv+"="+string(cc))
	cmd.Stderr = r.cfg.stderr
	// Held open while the replica runs (Wait closes it): if this process
	// dies without stopping the replica, the replica sees its stdin end.
	if _, err := cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("replica %s: %w", r.name, err)
	}
	exited := make(chan struct{})
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				select {
				case listening <- a:
				default:
				}
			}
		}
		_ = cmd.Wait() // after its output is read, as Wait requires
		r.mu.Lock()
		if r.cmd == cmd {
			r.running = false
		}
		r.mu.Unlock()
		close(exited)
	}()
	select {
	case a := <-listening:
		r.addr, r.cmd, r.exited, r.running = a, cmd, exited, true
		return nil
	case <-exited:
		return fmt.Errorf("replica %s exited before it listened", r.name)
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("replica %s did not listen within %s: %w", r.name, replicaBudget, ctx.Err())
	}
}

// kill sends the replica's process SIGKILL and waits for it to exit:
// connections are cut, requests in flight fail, nothing is drained.
func (r *replica) kill() error {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.running = false
	r.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-exited:
		return nil
	case <-time.After(replicaBudget):
		return fmt.Errorf("replica %s did not exit within %s of SIGKILL", r.name, replicaBudget)
	}
}

// exitedNow reports whether the replica's process has exited (a crash it
// was told to have) and waits for that, at most d.
func (r *replica) awaitExit(d time.Duration) bool {
	r.mu.Lock()
	exited := r.exited
	r.mu.Unlock()
	if exited == nil {
		return true
	}
	select {
	case <-exited:
		return true
	case <-time.After(d):
		return false
	}
}

// close kills the process and closes the run's store for the replica.
func (r *replica) close() error {
	err := r.kill()
	r.mu.Lock()
	store := r.store
	r.store, r.notify = nil, nil
	r.mu.Unlock()
	if store != nil {
		err = errors.Join(err, store.Close())
	}
	return err
}

// listen binds addr, retrying briefly: a port a killed process just held
// can take a moment to be free again.
func listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	for {
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err == nil {
			return ln, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("listening on %s: %w", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
