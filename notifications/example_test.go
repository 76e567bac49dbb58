package notifications_test

import (
	"context"
	"fmt"
	"time"

	"github.com/meshrx/meshrx/mesh/memstore"
	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
	"github.com/meshrx/meshrx/rx/rxtest"
)

func ExampleService_Bell() {
	clk := rxtest.NewClock()
	store, _ := memstore.New(memstore.Options{Clock: clk})
	defer store.Close()
	svc := &notifications.Service{Mesh: store, Clock: clk}
	ctx := context.Background()

	svc.Create(ctx, notifications.Notification{Title: "Draft shared", TargetPath: "acme/Docs/report"}, "alice/Inbox")
	clk.Advance(time.Minute)
	svc.Create(ctx, notifications.Notification{Title: "Build failed", TargetPath: "acme/ci"}, "alice")

	state, _ := rx.First(ctx, svc.Bell("alice"))
	for _, g := range state.Groups {
		for _, n := range g.Items {
			fmt.Printf("%s: %s (%s)\n", g.Source, n.Title, n.Addressee)
		}
	}
	fmt.Println("unread:", state.Unread)
	// Output:
	// acme/ci: Build failed (alice)
	// acme/Docs/report: Draft shared (alice)
	// unread: 2
}
