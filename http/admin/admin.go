// Package admin is the local admin socket: a Unix socket inside the data directory (mode 0600)
// through which the herald command line manages users, passwords and keys while a server holds the bbolt
// file. Going through the running server is what makes a revocation take effect at once: the
// server drops its key cache before the command returns.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

// SocketName is the admin socket's file name inside the data directory.
const SocketName = "admin.sock"

// SocketPath is the admin socket of a data directory.
func SocketPath(dir string) string { return filepath.Join(dir, SocketName) }

// Ops are the operations the socket offers. Serve fills the defaults from a store; a server adds
// its own (for example connected-account management) by setting the optional fields.
type Ops struct {
	Store *persistence.Store
	Auth  *auth.Authenticator
	Now   func() time.Time
	// PasswordParams hash the passwords set through the socket (zero: auth.DefaultPasswordParams).
	PasswordParams auth.PasswordParams
	// PasswordChanged, when set, learns how many sessions a password change ended (metrics).
	PasswordChanged func(ended int)
	// Extra routes ("POST /accounts" ...) added by other components.
	Extra map[string]http.HandlerFunc
}

// Server serves the admin socket.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	path string
}

// Listen opens the socket in dir and serves ops on it.
func Listen(dir string, ops Ops) (*Server, error) {
	path := SocketPath(dir)
	// A socket file left by a killed server is stale: nothing answers on it.
	if _, err := os.Stat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("admin: another server answers on %s", path)
		}
		_ = os.Remove(path)
	}
	old := umask(0o177)
	ln, err := net.Listen("unix", path)
	umask(old)
	if err != nil {
		return nil, fmt.Errorf("admin: listen on %s: %w", path, err)
	}
	// The socket file is removed by Close alone, never by the listener's own close: a server
	// closed before its Serve goroutine ran closes the listener again when that goroutine ends,
	// and a listener that unlinks its path on close would then remove the socket of the server
	// that listens there next.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("admin: chmod %s: %w", path, err)
	}
	if ops.Now == nil {
		ops.Now = time.Now
	}
	mux := http.NewServeMux()
	routes(mux, ops)
	s := &Server{ln: ln, path: path, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops serving and removes the socket.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	_ = s.ln.Close() // Shutdown closes only a listener Serve has begun with
	_ = os.Remove(s.path)
	return err
}

// PasswordSet is the answer of a password change: the user and how many of the user's sessions
// it ended.
type PasswordSet struct {
	User          *persistence.User `json:"user"`
	SessionsEnded int               `json:"sessions_ended"`
}

type errorBody struct {
	Error string `json:"error"`
}

// WriteResult answers an admin request: 200 with v, 400 for refused input, 500 otherwise.
func WriteResult(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, auth.ErrInvalid) {
			status = http.StatusBadRequest
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(errorBody{Error: err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

func routes(mux *http.ServeMux, ops Ops) {
	mux.HandleFunc("POST /users", func(w http.ResponseWriter, r *http.Request) {
		var in auth.NewUser
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			WriteResult(w, nil, fmt.Errorf("%w: %v", auth.ErrInvalid, err))
			return
		}
		in.PasswordParams = ops.PasswordParams
		u, err := auth.CreateUser(r.Context(), ops.Store, in, ops.Now())
		WriteResult(w, u, err)
	})
	mux.HandleFunc("POST /users/password", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Email    string `json:"email"`
			Password string `json:"password"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&in); err != nil {
			WriteResult(w, nil, fmt.Errorf("%w: %v", auth.ErrInvalid, err))
			return
		}
		u, ended, err := auth.SetPassword(r.Context(), ops.Store, in.Email, in.Password, ops.PasswordParams)
		if err == nil && ops.PasswordChanged != nil {
			ops.PasswordChanged(ended)
		}
		WriteResult(w, PasswordSet{User: u, SessionsEnded: ended}, err)
	})
	mux.HandleFunc("POST /keys", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Email     string `json:"email"`
			Name      string `json:"name"`
			ExpiresIn string `json:"expires_in"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			WriteResult(w, nil, fmt.Errorf("%w: %v", auth.ErrInvalid, err))
			return
		}
		// An expiry given must be positive: "0s" or "-1h" is refused, not taken for "none".
		var exp time.Duration
		if in.ExpiresIn != "" {
			var err error
			if exp, err = time.ParseDuration(in.ExpiresIn); err != nil {
				WriteResult(w, nil, fmt.Errorf("%w: --expires-in: %v", auth.ErrInvalid, err))
				return
			}
			if err := auth.KeyExpiry(exp); err != nil {
				WriteResult(w, nil, err)
				return
			}
		}
		k, err := auth.CreateKey(r.Context(), ops.Store, in.Email, in.Name, exp, ops.Now())
		WriteResult(w, k, err)
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		keys, err := auth.ListKeys(ops.Store, r.URL.Query().Get("email"))
		if err == nil && ops.Auth != nil {
			keys = ops.Auth.WithUse(keys)
		}
		WriteResult(w, keys, err)
	})
	mux.HandleFunc("POST /keys/{id}/revoke", func(w http.ResponseWriter, r *http.Request) {
		k, err := auth.RevokeKey(r.Context(), ops.Store, r.PathValue("id"), ops.Now())
		if err == nil && ops.Auth != nil {
			ops.Auth.Invalidate()
		}
		WriteResult(w, k, err)
	})
	mux.HandleFunc("POST /keys/{id}/regenerate", func(w http.ResponseWriter, r *http.Request) {
		k, err := auth.RegenerateKey(r.Context(), ops.Store, r.PathValue("id"))
		if err == nil && ops.Auth != nil {
			ops.Auth.Invalidate()
		}
		WriteResult(w, k, err)
	})
	mux.HandleFunc("POST /backup", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Out string `json:"out"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Out == "" {
			WriteResult(w, nil, fmt.Errorf("%w: want {\"out\": path}", auth.ErrInvalid))
			return
		}
		err := ops.Store.Backup(in.Out)
		WriteResult(w, map[string]string{"out": in.Out}, err)
	})
	for pattern, h := range ops.Extra {
		mux.HandleFunc(pattern, h)
	}
}

// Client talks to a running server's admin socket.
type Client struct {
	http *http.Client
}

// Dial returns a client when a server answers on dir's admin socket, and nil when none does.
func Dial(dir string) *Client {
	path := SocketPath(dir)
	c, err := net.DialTimeout("unix", path, 500*time.Millisecond)
	if err != nil {
		return nil
	}
	_ = c.Close()
	return &Client{http: &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}},
	}}
}

// Do sends one admin request and decodes the answer into out.
func (c *Client) Do(method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytesReader(b)
	}
	req, err := http.NewRequest(method, "http://admin"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e errorBody
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("admin socket: %s", resp.Status)
	}
	return json.Unmarshal(raw, out)
}
