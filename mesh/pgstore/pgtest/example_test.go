package pgtest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
)

// Start a throwaway server (or use the one MESHRX_PG_URL names), give the
// work a database of its own, and release both. It needs PostgreSQL's
// programs (initdb, pg_ctl, postgres), so it is compiled, not run; tests
// use a Harness instead, which starts the server once per test binary.
func ExampleStart() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	srv, err := pgtest.Start(ctx)
	if err != nil {
		log.Fatal(err) // a *pgtest.NotFoundError names what to install
	}
	defer func() { _ = srv.Stop() }() // stops the server and removes its directory

	dbURL, err := srv.CreateDatabase(ctx, "example")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = srv.DropDatabase(context.Background(), dbURL) }()

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var version string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		log.Fatal(err)
	}
	fmt.Println("PostgreSQL", version)
}
