package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// heraldStdin runs a command with stdin.
func heraldStdin(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(heraldBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

// signIn posts the JSON sign-in and returns its status and the browser's jar.
func (p *proc) signIn(email, password string) (int, http.CookieJar) {
	p.t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(p.t, err)
	c := &http.Client{Jar: jar}
	body, _ := json.Marshal(map[string]string{"email": email, "password": password})
	resp, err := c.Post(p.url+"/api/session", "application/json", bytes.NewReader(body))
	require.NoError(p.t, err)
	_ = resp.Body.Close()
	return resp.StatusCode, jar
}

func (p *proc) me(jar http.CookieJar) int {
	p.t.Helper()
	resp, err := (&http.Client{Jar: jar}).Get(p.url + "/api/me")
	require.NoError(p.t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// Passwords: set at creation from stdin and with set-password, offline on the bbolt file and
// online through the admin socket, where a change ends the user's sessions at once. The output
// never carries the password or its hash.
func TestPasswordCommandsOnlineAndOffline(t *testing.T) {
	dir := t.TempDir()
	out, err := heraldStdin(t, "first password\n", "users", "create", "--data", dir, "--email", "ops@example.com", "--password-stdin")
	require.NoError(t, err, out)
	require.NotContains(t, out, "first password")
	require.NotContains(t, out, "argon2")
	out, err = heraldStdin(t, "short\n", "users", "create", "--data", dir, "--email", "x@example.com", "--password-stdin")
	require.Error(t, err)
	require.Contains(t, out, "at least 10 characters")
	out, err = heraldStdin(t, "second password\n", "users", "set-password", "--data", dir, "--email", "ops@example.com")
	require.NoError(t, err, out)
	require.Contains(t, out, `"sessions_ended": 0`)
	out, err = heraldStdin(t, "", "users", "set-password", "--data", dir, "--email", "ops@example.com")
	require.Error(t, err)
	require.Contains(t, out, "no password on stdin")

	p := startServer(t, dir)
	status, _ := p.signIn("ops@example.com", "first password")
	require.Equal(t, 401, status)
	status, jar := p.signIn("ops@example.com", "second password")
	require.Equal(t, 200, status)
	require.Equal(t, 200, p.me(jar))

	out, err = heraldStdin(t, "third password!\n", "users", "set-password", "--data", dir, "--email", "ops@example.com")
	require.NoError(t, err, out)
	require.Contains(t, out, `"sessions_ended": 1`)
	require.Equal(t, 401, p.me(jar), "the change through the admin socket ended the session")
	status, _ = p.signIn("ops@example.com", "third password!")
	require.Equal(t, 200, status)
	out, err = heraldStdin(t, "fourth password\n", "users", "set-password", "--data", dir, "--email", "nobody@example.com")
	require.Error(t, err)
	require.Contains(t, out, "no user with e-mail")
}

// The sandbox writes the demo user's password to DIR/sandbox-password (0600) and it signs in.
func TestSandboxPasswordFile(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, dir, "--sandbox")
	path := filepath.Join(dir, "sandbox-password")
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	pw, err := os.ReadFile(path)
	require.NoError(t, err)
	status, jar := p.signIn("demo@herald.local", strings.TrimSpace(string(pw)))
	require.Equal(t, 200, status)
	require.Equal(t, 200, p.me(jar))
	require.Equal(t, 1, strings.Count(p.logText(), strings.TrimSpace(string(pw))), "logged once, at first start")
}
