package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
)

// A node address needs a store that several processes share: with bbolt, or with an address
// that is not HOST:PORT, or without the secret key every node shares, Herald refuses to start
// and says why.
func TestNodeAddrIsRefusedWithoutPostgres(t *testing.T) {
	t.Parallel()
	_, err := app.New(app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Log: discardLog(), NoAdminSocket: true, NodeAddr: "127.0.0.1:7001"})
	require.ErrorContains(t, err, "--node-addr")
	require.ErrorContains(t, err, "PostgreSQL")
	_, err = app.New(app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Log: discardLog(), NoAdminSocket: true, NodeAddr: "nohost",
		Store: "postgres://127.0.0.1:1/x"})
	require.ErrorContains(t, err, "HOST:PORT")
	_, err = app.New(app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Log: discardLog(), NoAdminSocket: true, NodeAddr: "127.0.0.1:7001",
		Store: "postgres://127.0.0.1:1/x"})
	require.ErrorContains(t, err, "HERALD_SECRET_KEY")
}
