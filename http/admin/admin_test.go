package admin_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/admin"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/storetest"
)

// fast hashes passwords cheaply: these tests prove the socket, not the hash.
var fast = auth.PasswordParams{Time: 1, MemoryKiB: 64, Threads: 1}

type socket struct {
	dir   string
	store *persistence.Store
	auth  *auth.Authenticator
	c     *admin.Client
	ended []int
}

// serve opens a real store and serves the admin socket on it, in a short directory (a Unix
// socket's path is limited to about 100 bytes).
func serve(t *testing.T, extra map[string]http.HandlerFunc) *socket {
	t.Helper()
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	return serveOn(t, store, extra)
}

func serveOn(t *testing.T, store *persistence.Store, extra map[string]http.HandlerFunc) *socket {
	t.Helper()
	dir, err := os.MkdirTemp("", "adm")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	t.Cleanup(func() { _ = store.Close() })
	s := &socket{dir: dir, store: store, auth: auth.NewAuthenticator(store, nil)}
	srv, err := admin.Listen(dir, admin.Ops{Store: store, Auth: s.auth, PasswordParams: fast, Extra: extra,
		PasswordChanged: func(n int) { s.ended = append(s.ended, n) }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	s.c = admin.Dial(dir)
	require.NotNil(t, s.c)
	return s
}

// The socket is a file only its owner can open, and it is gone once the server closes.
func TestTheSocketIsTheOwnersAlone(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "adm")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	require.Nil(t, admin.Dial(dir), "nothing answers before a server listens")
	srv, err := admin.Listen(dir, admin.Ops{Store: store})
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(dir, admin.SocketName))
	require.NoError(t, err)
	require.Equal(t, os.ModeSocket|0o600, info.Mode()&(os.ModeSocket|os.ModePerm))

	_, err = admin.Listen(dir, admin.Ops{Store: store})
	require.ErrorContains(t, err, "another server answers", "a second server on the same directory is refused")

	require.NoError(t, srv.Close())
	_, err = os.Stat(filepath.Join(dir, admin.SocketName))
	require.True(t, os.IsNotExist(err), "the socket is removed")
	require.Nil(t, admin.Dial(dir))

	// A socket file left by a killed server (nothing answers on it) is replaced.
	require.NoError(t, os.WriteFile(filepath.Join(dir, admin.SocketName), nil, 0o600))
	srv, err = admin.Listen(dir, admin.Ops{Store: store})
	require.NoError(t, err)
	require.NoError(t, srv.Close())
}

// Users, passwords and keys through the socket: what each operation answers, and that a
// revocation or a regeneration takes effect at once on the server's authenticator.
func TestUsersPasswordsAndKeysThroughTheSocket(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	var u persistence.User
	require.NoError(t, s.c.Do("POST", "/users", auth.NewUser{Email: "ann@example.com", Plan: "pro", Password: "correct horse battery"}, &u))
	require.Equal(t, "ann@example.com", u.Email)
	require.Equal(t, "pro", u.Plan)

	var pw admin.PasswordSet
	require.NoError(t, s.c.Do("POST", "/users/password", map[string]string{"email": "ann@example.com", "password": "another long password"}, &pw))
	require.Equal(t, u.ID, pw.User.ID)
	require.Equal(t, []int{pw.SessionsEnded}, s.ended, "the server learns how many sessions the change ended")

	var k auth.CreatedKey
	require.NoError(t, s.c.Do("POST", "/keys", map[string]string{"email": "ann@example.com", "name": "ci", "expires_in": "24h"}, &k))
	require.True(t, strings.HasPrefix(k.Key, "sk_live_"), k.Key)
	require.NotNil(t, k.ExpiresAt)
	require.WithinDuration(t, time.Now().Add(24*time.Hour), *k.ExpiresAt, time.Minute)
	p, err := s.auth.Authenticate("Bearer " + k.Key)
	require.NoError(t, err)
	require.Equal(t, u.ID, p.User.ID)

	var keys []auth.KeyInfo
	require.NoError(t, s.c.Do("GET", "/keys?email=ann@example.com", nil, &keys))
	require.Len(t, keys, 1)
	require.Equal(t, k.ID, keys[0].ID)
	require.Equal(t, "ci", keys[0].Name)

	var regen auth.CreatedKey
	require.NoError(t, s.c.Do("POST", "/keys/"+k.ID+"/regenerate", nil, &regen))
	require.NotEqual(t, k.Key, regen.Key)
	_, err = s.auth.Authenticate("Bearer " + k.Key)
	require.Error(t, err, "the old secret is refused at once")
	_, err = s.auth.Authenticate("Bearer " + regen.Key)
	require.NoError(t, err)

	var revoked auth.KeyInfo
	require.NoError(t, s.c.Do("POST", "/keys/"+k.ID+"/revoke", nil, &revoked))
	_, err = s.auth.Authenticate("Bearer " + regen.Key)
	require.Error(t, err, "a revoked key is refused at once")
}

// Bad input is refused with the reason and changes nothing; a server's extra routes are served.
func TestTheSocketRefusesBadInput(t *testing.T) {
	t.Parallel()
	s := serve(t, map[string]http.HandlerFunc{
		"GET /hello": func(w http.ResponseWriter, _ *http.Request) {
			admin.WriteResult(w, map[string]string{"hello": "there"}, nil)
		},
	})
	require.NoError(t, s.c.Do("POST", "/users", auth.NewUser{Email: "ann@example.com"}, &persistence.User{}))
	for _, c := range []struct {
		method, path string
		body         any
		want         string
	}{
		{"POST", "/users", auth.NewUser{Email: "not an address"}, "is not an e-mail address"},
		{"POST", "/users", auth.NewUser{Email: "bob@example.com", Plan: "platinum"}, "plan"},
		{"POST", "/users", "a string", "invalid"},
		{"POST", "/users/password", map[string]string{"email": "ann@example.com", "password": "short"}, "password"},
		{"POST", "/users/password", map[string]string{"email": "nobody@example.com", "password": "a long enough password"}, ""},
		{"POST", "/keys", map[string]string{"email": "ann@example.com", "expires_in": "0s"}, "expires"},
		{"POST", "/keys", map[string]string{"email": "ann@example.com", "expires_in": "soon"}, "--expires-in"},
		{"POST", "/keys", map[string]string{"email": "ann@example.com"}, "a key needs a name"},
		{"POST", "/keys", map[string]string{"email": "nobody@example.com", "name": "ci"}, "no user with e-mail nobody@example.com"},
		{"POST", "/backup", map[string]string{}, `want {"out": path}`},
	} {
		err := s.c.Do(c.method, c.path, c.body, &map[string]any{})
		require.Error(t, err, "%s %s %v", c.method, c.path, c.body)
		require.ErrorContains(t, err, c.want, "%s %s %v", c.method, c.path, c.body)
	}
	var keys []auth.KeyInfo
	require.NoError(t, s.c.Do("GET", "/keys?email=ann@example.com", nil, &keys))
	require.Empty(t, keys, "nothing was created")

	var hello map[string]string
	require.NoError(t, s.c.Do("GET", "/hello", nil, &hello))
	require.Equal(t, map[string]string{"hello": "there"}, hello)
}

// A backup through the socket (of the bbolt file; PostgreSQL is backed up with its own tools) is a
// store that opens, with what was there.
func TestBackupThroughTheSocket(t *testing.T) {
	t.Parallel()
	store, err := persistence.Open(t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	s := serveOn(t, store, nil)
	var u persistence.User
	require.NoError(t, s.c.Do("POST", "/users", auth.NewUser{Email: "ann@example.com"}, &u))
	dir := t.TempDir()
	out := filepath.Join(dir, "herald.db")
	var got map[string]string
	require.NoError(t, s.c.Do("POST", "/backup", map[string]string{"out": out}, &got))
	require.Equal(t, out, got["out"])
	copied, err := persistence.Open(dir, persistence.Options{})
	require.NoError(t, err, "the backup opens")
	defer copied.Close()
	require.NoError(t, copied.View(func(tx *persistence.Tx) error {
		got, err := tx.UserByEmail("ann@example.com")
		if err == nil {
			require.Equal(t, u.ID, got.ID)
		}
		return err
	}))
}

// A server closed at once, before its serving goroutine ran, leaves the socket of the server
// that listens on the same directory next in place.
func TestAServerClosedAtOnceLeavesTheNextOnesSocket(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "adm")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	store, err := storetest.Open(t, t.TempDir(), persistence.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	for range 50 {
		srv, err := admin.Listen(dir, admin.Ops{Store: store})
		require.NoError(t, err)
		require.NoError(t, srv.Close())
		next, err := admin.Listen(dir, admin.Ops{Store: store})
		require.NoError(t, err)
		time.Sleep(2 * time.Millisecond) // the first server's goroutine, if it was late, has ended
		_, err = os.Stat(filepath.Join(dir, admin.SocketName))
		require.NoError(t, err, "the next server's socket is in place")
		require.NotNil(t, admin.Dial(dir), "the next server answers")
		require.NoError(t, next.Close())
	}
}
