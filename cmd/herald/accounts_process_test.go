package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms/sim"
)

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

type printedAccount struct {
	ID            string  `json:"id"`
	Platform      string  `json:"platform"`
	Username      *string `json:"username"`
	NetworkUserID string  `json:"network_user_id"`
	Created       *bool   `json:"created"`
}

func addAccount(t *testing.T, args ...string) (printedAccount, string, error) {
	t.Helper()
	out, err := herald(t, append([]string{"accounts", "add"}, args...)...)
	var a printedAccount
	if err == nil {
		require.NoError(t, json.Unmarshal([]byte(out), &a), out)
	}
	return a, out, err
}

func listAccounts(t *testing.T, dir string) []printedAccount {
	t.Helper()
	out, err := herald(t, "accounts", "list", "--data", dir, "--email", "demo@herald.local")
	require.NoError(t, err, out)
	var l []printedAccount
	require.NoError(t, json.Unmarshal([]byte(out), &l), out)
	return l
}

// herald accounts add and list work through a running sandbox server's admin socket (with the
// server's simulator), and directly on the data directory when no server runs (pointed at a
// simulator with --sim-url); the server reads what was added offline.
func TestAccountsCommandsOnlineAndOffline(t *testing.T) {
	dir := t.TempDir()
	simAddr := freeAddr(t)
	p := startServer(t, dir, "--sandbox", "--sim-addr", simAddr)
	key := sandboxKey(t, dir)
	require.Len(t, listAccounts(t, dir), 9, "the sandbox's nine accounts")

	// Online: Bluesky, then the same handle again (no duplicate), then a wrong app password.
	a, out, err := addAccount(t, "--data", dir, "--email", "demo@herald.local", "--platform", "bluesky",
		"--handle", "alice.bsky.social", "--app-password", "abcd-efgh-ijkl-mnop")
	require.NoError(t, err, out)
	require.Equal(t, "bluesky", a.Platform)
	require.Equal(t, "alice.bsky.social", *a.Username)
	require.True(t, *a.Created)
	again, out, err := addAccount(t, "--data", dir, "--email", "demo@herald.local", "--platform", "bluesky",
		"--handle", "alice.bsky.social", "--app-password", "abcd-efgh-ijkl-mnop")
	require.NoError(t, err, out)
	require.Equal(t, a.ID, again.ID)
	require.False(t, *again.Created)
	_, out, err = addAccount(t, "--data", dir, "--email", "demo@herald.local", "--platform", "bluesky",
		"--handle", "bob.bsky.social", "--app-password", "wrong")
	require.Error(t, err)
	require.Contains(t, out, "invalid handle or app password")
	require.Len(t, listAccounts(t, dir), 10)

	// Online: X with tokens the simulator issued to the user's own client.
	resp, err := http.Post("http://"+simAddr+"/_sim/accounts", "application/json", strings.NewReader(`{"platform":"twitter_x","handle":"xwriter"}`))
	require.NoError(t, err)
	var creds struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		UserID       string `json:"user_id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&creds))
	_ = resp.Body.Close()
	x, out, err := addAccount(t, "--data", dir, "--email", "demo@herald.local", "--platform", "twitter_x",
		"--client-id", sim.ClientID, "--access-token", creds.AccessToken, "--refresh-token", creds.RefreshToken, "--expires-in", "7200")
	require.NoError(t, err, out)
	require.Equal(t, "xwriter", *x.Username)
	require.Equal(t, creds.UserID, x.NetworkUserID)
	_, out, err = addAccount(t, "--data", dir, "--email", "demo@herald.local", "--platform", "linkedin")
	require.Error(t, err)
	require.Contains(t, out, "connects through the browser")
	status, body := p.request(key, "GET", "/v1/accounts", "")
	require.Equal(t, 200, status)
	require.Contains(t, string(body), x.ID)

	// Offline: the server stops; a simulator of our own answers for Bluesky.
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	<-p.done
	s, err := sim.Start("127.0.0.1:0", sim.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	c, out, err := addAccount(t, "--data", dir, "--email", "demo@herald.local", "--platform", "bluesky",
		"--handle", "carol.bsky.social", "--app-password", "abcd-efgh-ijkl-mnop", "--sim-url", s.BaseURL())
	require.NoError(t, err, out)
	require.True(t, *c.Created)
	_, out, err = addAccount(t, "--data", dir, "--email", "demo@herald.local", "--platform", "bluesky",
		"--handle", "dave.bsky.social", "--app-password", "nope", "--sim-url", s.BaseURL())
	require.Error(t, err)
	require.Contains(t, out, "invalid handle or app password")
	_, out, err = addAccount(t, "--data", dir, "--email", "nobody@example.com", "--platform", "bluesky",
		"--handle", "erin.bsky.social", "--app-password", "abcd-efgh-ijkl-mnop", "--sim-url", s.BaseURL())
	require.Error(t, err)
	require.Contains(t, out, "no user with this e-mail")
	require.Len(t, listAccounts(t, dir), 12)

	// The server started again lists the account added offline.
	p = startServer(t, dir, "--sandbox")
	status, body = p.request(key, "GET", "/v1/accounts", "")
	require.Equal(t, 200, status)
	require.Contains(t, string(body), c.ID)
	require.Len(t, listAccounts(t, dir), 12)
}
