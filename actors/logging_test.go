package actors

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/testkit"
)

// syncBuffer collects output written from another goroutine.
type syncBuffer = testkit.SyncBuffer

type credentialsMsg struct{ AccessToken string }

const token = "tok-5f1d2c9a7b3e4d6f"

// A message sent to a stopped actor becomes a dead letter, which Proto.Actor logs at info level
// with the whole message: Herald's runtime logger passes only warnings.
func TestRuntimeLogsNoDeadLetterContent(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	sys := NewSystem(nil, slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(sys.Shutdown)
	pid := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	require.NoError(t, sys.Root.StopFuture(pid).Wait())
	sys.Root.Send(pid, &credentialsMsg{AccessToken: token}) // published to the dead letters synchronously
	require.NotContains(t, buf.String(), token)
}

// Warnings and errors of the runtime pass, with any message reduced to its type.
func TestRuntimeLogHandler(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	log := slog.New(newRuntimeLogHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))).With("seen", &credentialsMsg{AccessToken: token})
	pid := actor.NewPID("nonhost", "a$1")
	log.Info("[DeadLetter]", slog.Any("message", &credentialsMsg{AccessToken: token}))
	require.Empty(t, buf.String(), "info is dropped")
	log.Error("[Supervision]", slog.Any("actor", pid), slog.Any("message", &credentialsMsg{AccessToken: token}),
		slog.Any("exception", errors.New("boom")), slog.Group("g", slog.Any("inner", credentialsMsg{AccessToken: token})))
	out := buf.String()
	require.NotContains(t, out, token)
	require.Contains(t, out, `"message_type":"actors.credentialsMsg"`)
	require.Contains(t, out, `"seen_type":"actors.credentialsMsg"`)
	require.Contains(t, out, `"g":{"inner_type":"actors.credentialsMsg"}`)
	require.Contains(t, out, `"actor":"Address:`, "a process id stays readable")
	require.Contains(t, out, `a$1`)
	require.Contains(t, out, `"exception":"boom"`)
}
