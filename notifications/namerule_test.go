package notifications_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/notifications"
	"github.com/meshrx/meshrx/rx"
)

// TestABellViewerSpelledWithTheKelvinSignSeesNoneOfKatesNotifications: the
// viewer "\u212Aate" (KELVIN SIGN, which Unicode lower-cases to 'k') is not
// a partition name, so its bell is refused and a notification sent to it
// is not delivered to kate. Negative control: strings.ToLower, the fold
// partition keys used, spells it "kate"; kate's own bell shows it.
func TestABellViewerSpelledWithTheKelvinSignSeesNoneOfKatesNotifications(t *testing.T) {
	const kelvin = "\u212Aate"
	require.Equal(t, "kate", strings.ToLower(kelvin), "the control: the old fold")
	eachStore(t, func(t *testing.T, fx fixture) {
		svc := &notifications.Service{Mesh: fx.store, Clock: fx.clk}
		ctx := context.Background()
		_, err := svc.Create(ctx, notifications.Notification{Title: "for kate only", Type: notifications.General}, "kate")
		require.NoError(t, err)

		_, err = rx.First(ctx, svc.Bell(kelvin))
		var invalid *notifications.InvalidError
		assert.ErrorAs(t, err, &invalid, "the Kelvin-sign viewer's bell is refused")
		_, ok := notifications.ResolveAddressee(kelvin)
		assert.False(t, ok, "and it is no addressee")

		st, err := rx.First(ctx, svc.Bell("kate"))
		require.NoError(t, err)
		assert.Equal(t, 1, st.Unread, "control: kate's own bell shows it")
	})
}
