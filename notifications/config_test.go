package notifications_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

// Every method of a Service without its store refuses with a
// *ConfigError naming Service.Mesh, and panics in none; a method missing
// from the table fails. Control run: with the unexported errors.New value
// before it, every row failed errors.As.
func TestEveryMethodOfAServiceWithoutItsStoreRefusesNamingServiceMesh(t *testing.T) {
	var svc notifications.Service
	ctx := context.Background()
	calls := map[string]func() error{
		"Bell": func() error {
			_, err := rx.First(ctx, svc.Bell("alice"))
			return err
		},
		"Create": func() error {
			_, err := svc.Create(ctx, notifications.Notification{Title: "t"}, "alice")
			return err
		},
		"MarkRead": func() error { return svc.MarkRead(ctx, "alice", "id") },
		"MigrateLegacy": func() error {
			_, err := svc.MigrateLegacy(ctx)
			return err
		},
		"Prune": func() error {
			_, err := svc.Prune(ctx, "alice")
			return err
		},
	}
	typ := reflect.TypeFor[*notifications.Service]()
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		call, ok := calls[name]
		if !assert.True(t, ok, "Service.%s has no row", name) {
			continue
		}
		err := call()
		var bad *notifications.ConfigError
		if assert.ErrorAs(t, err, &bad, name) {
			assert.Equal(t, "Service.Mesh", bad.Setting, name)
		}
	}
	require.Len(t, calls, typ.NumMethod(), "a row for a method Service no longer has")
}
