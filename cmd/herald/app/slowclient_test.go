package app_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/auth"
)

// Slow clients are cut off: one that never finishes its headers, and one that trickles its body.
func TestSlowClientsAreCutOff(t *testing.T) { //nolint:tparallel // the cases count the connections of one Herald
	t.Parallel()
	a, err := app.New(app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Log: discardLog(), NoAdminSocket: true,
		RequestTimeout: 300 * time.Millisecond, HeaderTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, a.Start(context.Background()))
	t.Cleanup(func() { _ = a.Shutdown() })
	_, err = auth.CreateUser(context.Background(), a.Store, auth.NewUser{Email: "slow@example.com", Plan: "pro"}, time.Now())
	require.NoError(t, err)
	k, err := auth.CreateKey(context.Background(), a.Store, "slow@example.com", "k", 0, time.Now())
	require.NoError(t, err)

	cut := func(t *testing.T, send string) {
		c, err := net.Dial("tcp", a.Addr())
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Write([]byte(send))
		require.NoError(t, err)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		start := time.Now()
		_, _ = io.ReadAll(c) // returns when the server closes the connection
		require.Less(t, time.Since(start), 5*time.Second, "the server hung up on the slow client")
	}
	t.Run("headers", func(t *testing.T) {
		cut(t, "POST /v1/posts HTTP/1.1\r\nHost: x\r\n")
	})
	t.Run("body", func(t *testing.T) {
		cut(t, "POST /v1/posts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+k.Key+"\r\nContent-Length: 100\r\n\r\n{\"con")
	})
}
