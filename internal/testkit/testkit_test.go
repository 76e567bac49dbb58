package testkit

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCapturedLogsFlattenGroupsAndKeepPresetAttributes(t *testing.T) {
	logs, log := CaptureLogs()
	log.With("replica", "a").WithGroup("req").Warn("refused", "stage", "catalog")
	got := Receive(t, logs.Added, "the warning")
	require.Equal(t, "refused", got.Message)
	require.Equal(t, "a", got.Attrs["replica"].String())
	require.Equal(t, "catalog", got.Attrs["req.stage"].String())
	require.Len(t, logs.Matching(slog.LevelWarn, "refus"), 1)
	require.Empty(t, logs.At(slog.LevelInfo))
	require.Equal(t, []string{"refused"}, logs.Messages(slog.LevelWarn))
}
