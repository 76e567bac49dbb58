package pgstore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/rx"
)

// Open a store on a PostgreSQL database (Open migrates it), write a node,
// and follow a live query: its Initial, then a frame per write that changes
// its result, from this process or any other on the same database. It needs
// a server, so it is compiled but not run.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := pgstore.Open(ctx, os.Getenv("DATABASE_URL"), pgstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	if _, err := store.Put(ctx, mesh.Node{Path: "acme/Docs/intro", NodeType: "Article", Name: "Introduction"}); err != nil {
		log.Fatal(err)
	}
	sub := store.Query("namespace:acme/Docs nodeType:Article").Subscribe(rx.NewObserver(
		func(c mesh.Change) { fmt.Println(c.Kind, len(c.Items), "node(s) from", c.Partitions) },
		func(err error) { log.Print(err) }, // *mesh.UnavailableError when the database cannot answer
		nil,
	))
	defer sub.Unsubscribe()

	if _, err := store.Put(ctx, mesh.Node{Path: "acme/Docs/setup", NodeType: "Article", Name: "Setup"}); err != nil {
		log.Fatal(err)
	}
}

// A deploy pipeline that migrates before the service starts: the deploy
// step runs MigrateURL with a role allowed to change the schema, and the
// service opens with SkipMigrate, changing no schema (it refuses a database
// that lacks a migration, naming it). A database that cannot be reached is
// unavailable, and the error says what to check. It needs a server, so it
// is compiled but not run.
func ExampleMigrateURL() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The deploy step.
	if err := pgstore.MigrateURL(ctx, os.Getenv("MIGRATION_DATABASE_URL")); err != nil {
		if mesh.IsUnavailable(err) {
			log.Fatalf("database not reachable, retry the deploy step: %v", err)
		}
		log.Fatal(err)
	}
	// The service, later, as a role without DDL rights.
	store, err := pgstore.Open(ctx, os.Getenv("DATABASE_URL"), pgstore.Options{SkipMigrate: true})
	if err != nil {
		log.Fatal(err) // wraps pgstore.ErrNotMigrated when the deploy step did not run
	}
	defer store.Close()
}
