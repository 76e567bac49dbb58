package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/meshrx/meshrx/internal/s3test"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/rx"
)

// env is what a fault acts on.
type env struct {
	db       database       // nil: no control of the server (-pg without -pg-ctl)
	s3       *s3test.Server // the object store holding the module volume (-volume s3), or nil
	pgURL    string
	replicas []*replica
	out      func(format string, args ...any)
	down     func(from, to time.Time) // records a window the database was held down
	load     *load
	watchers *sync.WaitGroup // watches a fault started, waited for before verification
}

// fault is one step of the schedule. inject returns when the fault is over
// (the database back, the replica restarted, the volume fast again).
type fault struct {
	name    string
	needsDB bool // needs control of the server
	inject  func(ctx context.Context, e *env) error
	quiet   time.Duration
}

// wait sleeps d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func terminateBackends() fault {
	return fault{name: "every backend terminated (pg_terminate_backend, listeners included)", inject: func(ctx context.Context, e *env) error {
		n, err := terminateAll(ctx, e.pgURL)
		e.out("  terminated %d backends\n", n)
		return err
	}}
}

func fastRestart() fault {
	return fault{name: "PostgreSQL fast restart", needsDB: true, inject: func(ctx context.Context, e *env) error {
		if err := e.db.Halt(ctx); err != nil { // pg_ctl stop -m fast, then start: a restart
			return err
		}
		e.down(time.Now(), time.Now())
		return e.db.Resume(context.WithoutCancel(ctx))
	}}
}

func stopped(d time.Duration) fault {
	return fault{name: fmt.Sprintf("PostgreSQL stopped %s, then started", d), needsDB: true, inject: func(ctx context.Context, e *env) error {
		if err := e.db.Halt(ctx); err != nil {
			return err
		}
		from := time.Now()
		wait(ctx, d)
		e.down(from, time.Now())
		// Started even when the run is ending: the server must not be left down.
		return e.db.Resume(context.WithoutCancel(ctx))
	}}
}

func paused(d time.Duration) fault {
	return fault{name: fmt.Sprintf("PostgreSQL paused (SIGSTOP) %s, then SIGCONT", d), needsDB: true, inject: func(ctx context.Context, e *env) error {
		if err := pause(e.db); err != nil {
			_ = unpause(e.db)
			return err
		}
		from := time.Now()
		wait(ctx, d)
		e.down(from, time.Now())
		return unpause(e.db)
	}}
}

func replicaKilled(down time.Duration) fault {
	return fault{name: "replica b killed (SIGKILL) and restarted", inject: func(ctx context.Context, e *env) error {
		r := e.replicas[len(e.replicas)-1]
		if err := r.kill(); err != nil {
			e.out("  teardown of %s: %v\n", r.name, err)
		}
		wait(ctx, down)
		return r.start(context.WithoutCancel(ctx))
	}}
}

func slowVolume(d, perOp time.Duration) fault {
	return fault{name: fmt.Sprintf("module volume slow (%s per file operation) for %s", perOp, d), inject: func(ctx context.Context, e *env) error {
		set := func(on bool) error {
			var errs []error
			for _, r := range e.replicas {
				errs = append(errs, r.setControl(controlSlow, on, perOp.String()))
			}
			return errors.Join(errs...)
		}
		if err := set(true); err != nil {
			return err
		}
		wait(ctx, d)
		return set(false)
	}}
}

// objectStoreStopped stops the S3-protocol server holding the module
// volume for d (its listener closed: connections refused), then starts it
// again on the same address with its objects.
func objectStoreStopped(d time.Duration) fault {
	return fault{name: fmt.Sprintf("object store stopped %s, then started", d), inject: func(ctx context.Context, e *env) error {
		e.s3.Stop()
		wait(ctx, d)
		return e.s3.Restart()
	}}
}

// schedules by name; objectStore adds the object store's outage.
func schedule(name string, quiet time.Duration, objectStore bool) ([]fault, error) {
	var fs []fault
	switch name {
	case "full":
		fs = []fault{terminateBackends(), fastRestart(), stopped(20 * time.Second), paused(10 * time.Second),
			replicaKilled(2 * time.Second), slowVolume(20*time.Second, 100*time.Millisecond),
			announceFails(20 * time.Second), crashAfterCommit(), clockSkewed(-time.Hour)}
		if quiet <= 0 {
			quiet = 30 * time.Second
		}
	case "short": // ≤ 60 s, for go test: the faults that need no long outage
		fs = []fault{terminateBackends(), fastRestart(), replicaKilled(time.Second), slowVolume(3*time.Second, 50*time.Millisecond),
			announceFails(4 * time.Second), crashAfterCommit(), clockSkewed(-time.Hour)}
		if quiet <= 0 {
			quiet = 5 * time.Second
		}
	default:
		return nil, fmt.Errorf("-schedule %q: want full or short", name)
	}
	if objectStore {
		fs = append(fs, objectStoreStopped(map[bool]time.Duration{true: 4 * time.Second, false: 20 * time.Second}[name == "short"]))
	}
	for i := range fs {
		fs[i].quiet = quiet
	}
	return fs, nil
}

// recoveryBudget bounds the wait for both replicas to answer after a fault.
const recoveryBudget = 3 * time.Minute

// awaitRecovery returns how long after end both replicas answered the index
// 200 (-1 when one did not within recoveryBudget).
func awaitRecovery(ctx context.Context, l *load, end time.Time) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, recoveryBudget)
	defer cancel()
	var mu sync.Mutex
	worst, failed := time.Duration(0), false
	var wg sync.WaitGroup
	for _, r := range l.replicas {
		wg.Go(func() {
			for ctx.Err() == nil {
				resp, _, err := l.get(ctx, r.baseURL()+client.IndexPath, "")
				if err == nil && resp.StatusCode == http.StatusOK {
					mu.Lock()
					worst = max(worst, time.Since(end))
					mu.Unlock()
					return
				}
				wait(ctx, 100*time.Millisecond)
			}
			mu.Lock()
			failed = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if failed {
		return -1
	}
	return worst
}

// awaitFeeds returns how long after end both replicas' change feeds were
// connected (-1 when not within recoveryBudget).
func awaitFeeds(ctx context.Context, l *load, end time.Time) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, recoveryBudget)
	defer cancel()
	for ctx.Err() == nil {
		all := true
		for _, r := range l.replicas {
			store, _ := r.current()
			if store == nil {
				all = false
				break
			}
			st, err := rx.First(ctx, store.Feed())
			if err != nil || !st.Connected {
				all = false
				break
			}
		}
		if all {
			return time.Since(end)
		}
		wait(ctx, 20*time.Millisecond)
	}
	return -1
}
