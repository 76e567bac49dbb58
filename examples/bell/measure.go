package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/auth/access"
	"github.com/meshrx/meshrx/internal/quantile"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

// measureConfig is what -measure runs.
type measureConfig struct {
	enabled       bool
	partitions    int // partitions in all, Admin included
	notifications int
	samples       int
}

// Budgets of the measurement's waits.
const (
	fillBudget   = 10 * time.Minute // writing every notification
	sampleBudget = time.Minute      // one timed read
)

// oldBellQuery is the bell as it was before addressed delivery: every
// notification in the mesh, one UNION ALL over every partition schema. It is
// read here only to be measured against the pinned bell, and so declares
// itself mesh-wide.
const oldBellQuery = "nodeType:" + notifications.NodeType + " partitions:all"

// figures are the results of one measurement.
type figures struct {
	Partitions, Notifications, Samples int
	PinnedP50, PinnedP99               time.Duration // bell open (first state): viewer leg + Admin leg
	LegP50, LegP99                     time.Duration // first frame of one pinned leg, BellQuery(viewer)
	OldP50, OldP99                     time.Duration // first frame of oldBellQuery
	PinnedLocks, PinnedRelationLocks   int           // pg_locks rows held by one pinned bell read
	OldLocks, OldRelationLocks         int           // ... by one read of the old shape, as pgstore runs it
	OldNotifLocks, OldNotifRelLocks    int           // ... by the old shape over the notifications tables only
}

// measure fills the database at cfg.pg with cfg.measure.partitions
// partitions holding cfg.measure.notifications notifications, then times
// opening the pinned bell against reading the old unanchored shape, and
// counts the locks one read of each holds, and prints the figures.
func measure(ctx context.Context, cfg config, stdout io.Writer, logger *slog.Logger) error {
	if cfg.pg == "" {
		return errors.New("-measure needs -pg URL: the figures are about PostgreSQL")
	}
	f, err := runMeasurement(ctx, cfg.pg, cfg.measure, logger)
	if err != nil {
		return err
	}
	printFigures(stdout, f)
	return nil
}

// measureUsers returns the partitions of a measurement: n-1 users and Admin.
func measureUsers(n int) []string {
	users := make([]string, 0, n)
	for i := range n - 1 {
		users = append(users, fmt.Sprintf("user%03d", i))
	}
	return append(users, notifications.Admin)
}

func runMeasurement(ctx context.Context, url string, m measureConfig, logger *slog.Logger) (figures, error) {
	f := figures{Partitions: m.partitions, Notifications: m.notifications, Samples: m.samples}
	if m.partitions < 2 || m.partitions > maxGeneratedUsers {
		// Each partition is a user and a schema: a slice of them is made.
		return f, fmt.Errorf("-partitions must be between 2 and %d (got %d)", maxGeneratedUsers, m.partitions)
	}
	if m.notifications < 1 || m.samples < 1 {
		return f, fmt.Errorf("-measure needs at least 2 partitions, 1 notification and 1 sample (got %d, %d, %d)",
			m.partitions, m.notifications, m.samples)
	}
	// The store logs every fan-out read at Info; the old shape is read on
	// purpose here, hundreds of times.
	quiet := slog.New(&levelHandler{min: slog.LevelWarn, Handler: logger.Handler()})
	store, closeStore, err := openStore(ctx, config{pg: url}, clock.New(), quiet)
	if err != nil {
		return f, err
	}
	defer closeStore()
	users := measureUsers(m.partitions)
	svc := &notifications.Service{
		Mesh:      store,
		Clock:     clock.New(),
		Admins:    notifications.GlobalAdminsFunc(func(context.Context, string) access.Decision { return access.Allowed }),
		Retention: m.notifications + 1, // keep every one: the figures are about volume
		Logger:    quiet,
	}
	have, err := rx.First(ctx, rx.TimeoutStage(store.Query(oldBellQuery), "counting notifications", sampleBudget, clock.New()))
	if err != nil {
		return f, fmt.Errorf("counting the notifications already there: %w", err)
	}
	if len(have.Items) != m.notifications {
		if err := fill(ctx, svc, users, m.notifications); err != nil {
			return f, err
		}
	}

	viewers := users[:len(users)-1]
	// The three reads take turns, so that whatever else the machine does
	// while they are timed weighs on each alike.
	times, err := timeReads(ctx, m.samples, []func(ctx context.Context, i int) error{
		func(ctx context.Context, i int) error {
			_, err := rx.First(ctx, svc.Bell(viewers[i%len(viewers)]))
			return err
		},
		func(ctx context.Context, i int) error {
			_, err := rx.First(ctx, store.Query(notifications.BellQuery(viewers[i%len(viewers)])))
			return err
		},
		func(ctx context.Context, _ int) error {
			_, err := rx.First(ctx, store.Query(oldBellQuery))
			return err
		},
	})
	if err != nil {
		return f, err
	}
	f.PinnedP50, f.PinnedP99 = quantile.Of(times[0], 0.50), quantile.Of(times[0], 0.99)
	f.LegP50, f.LegP99 = quantile.Of(times[1], 0.50), quantile.Of(times[1], 0.99)
	f.OldP50, f.OldP99 = quantile.Of(times[2], 0.50), quantile.Of(times[2], 0.99)

	if err := countLocks(ctx, url, viewers[0], &f); err != nil {
		return f, err
	}
	return f, nil
}

// fill creates n notifications spread round-robin over users (Admin among
// them). Each has an identity, so a second run on the same database replaces
// them instead of doubling the volume.
func fill(ctx context.Context, svc *notifications.Service, users []string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, fillBudget)
	defer cancel()
	const workers = 8
	work := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range work {
				to := users[i%len(users)]
				_, err := svc.Create(ctx, notifications.Notification{
					Title:      fmt.Sprintf("notification %d", i),
					Message:    "measurement filler",
					TargetPath: fmt.Sprintf("%s/Items/item%d", users[(i/len(users))%len(users)], i),
					Identity:   fmt.Sprintf("measure:%d", i),
				}, to)
				if err != nil {
					errs <- fmt.Errorf("filling notification %d: %w", i, err)
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range n {
		select {
		case work <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = fmt.Errorf("filling %d notifications: not done within %s: %w", n, fillBudget, ctx.Err())
			break feed
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	if err == nil {
		err = <-errs // nil when no worker failed
	}
	return err
}

// timeReads runs each read n times, taking turns, after two untimed rounds
// of warm-up, and returns the durations of each.
func timeReads(ctx context.Context, n int, reads []func(ctx context.Context, i int) error) ([][]time.Duration, error) {
	out := make([][]time.Duration, len(reads))
	for i := -2; i < n; i++ {
		for r, read := range reads {
			rctx, cancel := context.WithTimeout(ctx, sampleBudget)
			start := time.Now()
			err := read(rctx, max(i, 0))
			took := time.Since(start)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("timed read %d, round %d: %w", r, i, err)
			}
			if i >= 0 {
				out[r] = append(out[r], took)
			}
		}
	}
	return out, nil
}

// countLocks reads, in one transaction each, what the store reads for a bell
// (the viewer's and Admin's notifications tables) and for the old shape (as
// pgstore runs an unanchored read: every node table of every partition
// schema, one UNION ALL; and the notifications tables alone), and counts the
// locks the transaction then holds.
func countLocks(ctx context.Context, url, viewer string, f *figures) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("counting locks: connecting: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()

	var schemas []string
	rows, err := conn.Query(ctx, `SELECT schema_name FROM public.searchable_schemas ORDER BY 1`)
	if err == nil {
		schemas, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		return fmt.Errorf("counting locks: listing partition schemas: %w", err)
	}
	pinned := [][2]string{{mesh.SchemaOf(viewer), "notifications"}, {mesh.SchemaOf(notifications.Admin), "notifications"}}
	var all, notifs [][2]string
	for _, s := range schemas {
		for _, t := range pgstore.Tables() {
			all = append(all, [2]string{s, t})
		}
		notifs = append(notifs, [2]string{s, "notifications"})
	}
	for _, c := range []struct {
		tables     [][2]string
		total, rel *int
	}{
		{pinned, &f.PinnedLocks, &f.PinnedRelationLocks},
		{all, &f.OldLocks, &f.OldRelationLocks},
		{notifs, &f.OldNotifLocks, &f.OldNotifRelLocks},
	} {
		if *c.total, *c.rel, err = locksHeldBy(ctx, conn, c.tables); err != nil {
			return err
		}
	}
	return nil
}

// locksHeldBy runs the read of tables the way pgstore does (one statement,
// UNION ALL of whole-table selects) inside a transaction and returns how many
// locks the transaction holds afterwards, in all and on relations.
func locksHeldBy(ctx context.Context, conn *pgx.Conn, tables [][2]string) (total, relation int, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	parts := make([]string, 0, len(tables))
	for _, t := range tables {
		parts = append(parts, "SELECT namespace, id, path, name, node_type, main_node, content, version, state, last_modified FROM "+
			pgx.Identifier{t[0], t[1]}.Sanitize())
	}
	rows, err := tx.Query(ctx, strings.Join(parts, "\nUNION ALL "))
	if err != nil {
		return 0, 0, fmt.Errorf("counting locks: reading %d tables: %w", len(tables), err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("counting locks: reading %d tables: %w", len(tables), err)
	}
	err = tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE locktype = 'relation')
		FROM pg_locks WHERE pid = pg_backend_pid()`).Scan(&total, &relation)
	if err != nil {
		return 0, 0, fmt.Errorf("counting locks: %w", err)
	}
	return total, relation, nil
}

func printFigures(w io.Writer, f figures) {
	fmt.Fprintf(w, "bell on PostgreSQL: %d partitions, %d notifications, %d timed opens per shape\n\n",
		f.Partitions, f.Notifications, f.Samples)
	fmt.Fprintf(w, "%-58s %10s %10s %14s\n", "read", "p50", "p99", "locks (rel.)")
	fmt.Fprintf(w, "%-58s %10s %10s %14s\n", "pinned bell: viewer leg + Admin leg (2 schemas)",
		round(f.PinnedP50), round(f.PinnedP99), fmt.Sprintf("%d (%d)", f.PinnedLocks, f.PinnedRelationLocks))
	fmt.Fprintf(w, "%-58s %10s %10s %14s\n", "one pinned leg: namespace:{viewer}/_Notification",
		round(f.LegP50), round(f.LegP99), "")
	fmt.Fprintf(w, "%-58s %10s %10s %14s\n", "old bell: "+oldBellQuery+" (every schema)",
		round(f.OldP50), round(f.OldP99), fmt.Sprintf("%d (%d)", f.OldLocks, f.OldRelationLocks))
	fmt.Fprintf(w, "%-58s %10s %10s %14s\n", "old bell, notifications tables only (lock count)",
		"", "", fmt.Sprintf("%d (%d)", f.OldNotifLocks, f.OldNotifRelLocks))
}

func round(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// levelHandler drops records below min.
type levelHandler struct {
	min slog.Level
	slog.Handler
}

func (h *levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h *levelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &levelHandler{min: h.min, Handler: h.Handler.WithAttrs(as)}
}

func (h *levelHandler) WithGroup(name string) slog.Handler {
	return &levelHandler{min: h.min, Handler: h.Handler.WithGroup(name)}
}
