package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/admin"
)

// A key's expiry, when given, must be positive at every door: `herald keys create --expires-in`
// offline and through a running server's admin socket, and the socket itself. A zero or negative
// one is refused with a clear message and makes no key (a key that never expires is made by
// giving no expiry).
func TestKeyExpiryMustBePositive(t *testing.T) {
	dir := t.TempDir()
	out, err := herald(t, "users", "create", "--data", dir, "--email", "ops@example.com")
	require.NoError(t, err, out)
	keys := func() []map[string]any {
		t.Helper()
		out, err := herald(t, "keys", "list", "--data", dir, "--email", "ops@example.com")
		require.NoError(t, err, out)
		var list []map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &list), out)
		return list
	}
	refused := func(where string) {
		t.Helper()
		for _, d := range []string{"-1h", "0s", "0", "-1ns"} {
			out, err := herald(t, "keys", "create", "--data", dir, "--email", "ops@example.com", "--name", "ci", "--expires-in", d)
			require.Error(t, err, "%s: --expires-in %s: %s", where, d, out)
			require.Contains(t, out, "--expires-in must be positive", "%s: %s", where, d)
			require.Contains(t, out, "omit it for a key that does not expire", "%s: %s", where, d)
		}
		require.Empty(t, keys(), "%s: no key was made", where)
	}
	refused("offline")

	p := startServer(t, dir)
	_ = p
	c := admin.Dial(dir)
	require.NotNil(t, c, "the server answers on its admin socket")
	refused("online")
	// The socket refuses them too, whoever calls it.
	for _, d := range []string{"-1h", "0s"} {
		var v json.RawMessage
		err := c.Do("POST", "/keys", map[string]string{"email": "ops@example.com", "name": "ci", "expires_in": d}, &v)
		require.Error(t, err, d)
		require.Contains(t, err.Error(), "--expires-in must be positive", d)
	}
	require.Empty(t, keys())

	// A positive expiry, and none at all, still work.
	out, err = herald(t, "keys", "create", "--data", dir, "--email", "ops@example.com", "--name", "month", "--expires-in", "720h")
	require.NoError(t, err, out)
	var k struct {
		ExpiresAt *string `json:"expires_at"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &k))
	require.NotNil(t, k.ExpiresAt)
	out, err = herald(t, "keys", "create", "--data", dir, "--email", "ops@example.com", "--name", "forever")
	require.NoError(t, err, out)
	k.ExpiresAt = nil
	require.NoError(t, json.Unmarshal([]byte(out), &k))
	require.Nil(t, k.ExpiresAt)
	require.Len(t, keys(), 2)
}
