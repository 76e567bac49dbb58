package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/meshrx/meshrx/mesh"
)

// MigrateURL is the deploy step of a pipeline that migrates before the
// service starts (which then opens with Options.SkipMigrate): it connects
// to url, applies Migrate, and runs BackfillKeys to completion, all bounded
// by ctx. It is safe to run again and beside running stores. The role in
// url needs the right to create schemas, tables, functions and indexes.
func MigrateURL(ctx context.Context, url string) error {
	if ctx == nil {
		return nilArg("MigrateURL", "ctx")
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("pgstore: parsing the database URL: %w", err)
	}
	pinSearchPath(cfg.RuntimeParams)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return connectError(&cfg.Config, err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackBudget)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if err := Migrate(ctx, conn); err != nil {
		return err
	}
	if _, err := BackfillKeys(ctx, conn); err != nil {
		return err
	}
	return nil
}

// CheckMigrated reports whether every migration of this build is applied
// to db with the checksum it has: nil, an error wrapping ErrNotMigrated
// naming the first one missing, or a *MigrationChangedError. It changes
// nothing; Open runs it instead of Migrate under Options.SkipMigrate. Its
// wait for a lock on public.meshrx_migrations (held by an ALTER, a LOCK
// TABLE) is bounded by TableLockBudget, as Migrate's is: running out is a
// *LockTimeoutError. The caller's lock_timeout is as it was.
func CheckMigrated(ctx context.Context, db DB) error {
	if err := ctxDB("CheckMigrated", ctx, db); err != nil {
		return err
	}
	return checkMigrated(ctx, db, TableLockBudget)
}

// checkMigrated is CheckMigrated with its table lock wait bounded by
// tableBudget.
func checkMigrated(ctx context.Context, db DB, tableBudget time.Duration) error {
	migrations, err := loadMigrations()
	if err != nil {
		return err
	}
	applied := map[string]string{}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var previous string
		if err := tx.QueryRow(ctx, `SELECT pg_catalog.current_setting('lock_timeout')`).Scan(&previous); err != nil {
			return fmt.Errorf("pgstore: reading lock_timeout: %w", err)
		}
		if err := setLocal(ctx, tx, "lock_timeout", fmt.Sprint(tableBudget.Milliseconds())); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT name, checksum FROM public.meshrx_migrations`)
		if err != nil {
			return err
		}
		var name, sum string
		if _, err := pgx.ForEachRow(rows, []any{&name, &sum}, func() error {
			applied[name] = sum
			return nil
		}); err != nil {
			return err
		}
		// A savepoint's release (db a pgx.Tx) keeps a local setting.
		return setLocal(ctx, tx, "lock_timeout", previous)
	})
	switch {
	case pgCode(err) == "55P03": // lock_not_available
		return &LockTimeoutError{Lock: migrationsTableLock + " (reading the applied migrations)", After: tableBudget, Err: err}
	case missingRelation(err):
		return fmt.Errorf("%w: it has no public.meshrx_migrations table; run pgstore.MigrateURL (or open without Options.SkipMigrate)", ErrNotMigrated)
	case err != nil:
		return fmt.Errorf("pgstore: reading applied migrations: %w", err)
	}
	for _, m := range migrations {
		sum, ok := applied[m.name]
		switch {
		case !ok:
			return fmt.Errorf("%w: migration %s is not applied; run pgstore.MigrateURL (or open without Options.SkipMigrate)", ErrNotMigrated, m.name)
		case sum != m.checksum:
			return &MigrationChangedError{Name: m.name, Applied: sum, ByFile: m.checksum}
		}
	}
	return nil
}

// connectError says what failed when no connection to the database could
// be made. A server that cannot be reached (refused, unresolvable, no
// answer in time, closed the connection) is a *mesh.UnavailableError:
// retrying later may succeed. A server that answered and refused (a
// password, a database that does not exist) is the caller's to fix, and is
// not unavailable. Either says what to check.
func connectError(cfg *pgconn.Config, err error) error {
	where := "the database"
	if cfg != nil {
		where = fmt.Sprintf("the database %q at %s:%d as user %q", cfg.Database, cfg.Host, cfg.Port, cfg.User)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return fmt.Errorf("pgstore: connecting to %s: the server refused (%s %s); check the user, password and database name in the URL, and pg_hba.conf: %w",
			where, pgErr.Code, pgErr.Message, err)
	}
	check := "check that PostgreSQL is running and listening there, the URL's host and port, and any firewall between"
	if msg := err.Error(); strings.Contains(msg, "tls") || strings.Contains(msg, "SSL") {
		check = "check the URL's sslmode (sslmode=disable for a local server without TLS) and the server's TLS setup"
	}
	return &mesh.UnavailableError{Op: "connect to " + where, Err: fmt.Errorf("%w; %s", err, check)}
}

// isConnectFailure says whether err means no connection could be made.
func isConnectFailure(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}
