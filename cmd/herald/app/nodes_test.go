package app_test

import (
	"strings"
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

// An advertised node address must be one the other nodes can reach: HOST:PORT with a host that
// is not every interface's; a node listening on every interface must say where it is reached;
// and an advertised address means nothing without a node address.
func TestNodeAdvertiseIsRefusedWhenUnreachable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ addr, advertise, want string }{
		{"127.0.0.1:7001", "nohost", "--node-advertise"},
		{"127.0.0.1:7001", "10.0.0.5:0", "--node-advertise"},
		{"0.0.0.0:7001", "0.0.0.0:7001", "--node-advertise"},
		{"0.0.0.0:7001", "", "set --node-advertise"},
		{"[::]:7001", "", "set --node-advertise"},
		{"", "10.0.0.5:7001", "set --node-addr"},
	} {
		_, err := app.New(app.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Log: discardLog(), NoAdminSocket: true,
			NodeAddr: c.addr, NodeAdvertise: c.advertise, Store: "postgres://127.0.0.1:1/x", SecretKey: strings.Repeat("ab", 32)})
		require.ErrorContains(t, err, c.want, "%+v", c)
	}
}
