// Package pgtest starts a real PostgreSQL server for the tests of a package: one server per test
// binary, started on first use by initdb and pg_ctl (as the postgres user when the tests run as
// root, since PostgreSQL refuses to run as root) in a temporary directory, listening on a free
// loopback port, with one database for the package and one fresh schema per store a test opens.
// A package that uses it stops the server from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// When PostgreSQL is not installed (initdb and pg_ctl neither on PATH nor under
// /usr/lib/postgresql/*/bin) a test that asks for it is skipped, and fails under CI=true.
package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvStore names the backend that the actor and API tests run on: "postgres" runs them on
// PostgreSQL; anything else on bbolt.
const EnvStore = "HERALD_TEST_STORE"

// Enabled reports whether HERALD_TEST_STORE=postgres asks the tests that store data to run on
// PostgreSQL.
func Enabled() bool { return os.Getenv(EnvStore) == "postgres" }

var (
	mu      sync.Mutex
	srv     *server
	srvErr  error
	started bool
	schemas atomic.Int64
)

type server struct {
	dir    string
	pgCtl  string
	asUser string // "postgres" when run as root
	port   int
	db     string
}

// Main runs the package's tests and then stops the server if one was started.
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if srv != nil {
		srv.stop()
	}
	return code
}

// URL returns the connection URL of a new, empty schema in the package's database, starting the
// server on first use.
func URL(t testing.TB) string {
	t.Helper()
	s, err := get()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is needed: %v", err)
		}
		t.Skipf("PostgreSQL is not available: %v", err)
	}
	name := fmt.Sprintf("s%d", schemas.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.url(""))
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	return s.url(name)
}

// Stop stops the server at once (pg_ctl stop -m immediate: as a crash, without a checkpoint). It
// fails the test when there is no server.
func Stop(t testing.TB) {
	t.Helper()
	s := current(t)
	if out, err := s.ctl("stop", "-m", "immediate"); err != nil {
		t.Fatalf("pgtest: stop: %v\n%s", err, out)
	}
}

// Start starts the server again after Stop.
func Start(t testing.TB) {
	t.Helper()
	s := current(t)
	if err := s.start(); err != nil {
		t.Fatalf("pgtest: start: %v", err)
	}
}

func current(t testing.TB) *server {
	mu.Lock()
	defer mu.Unlock()
	if srv == nil {
		t.Fatal("pgtest: no server was started")
	}
	return srv
}

func (s *server) url(schema string) string {
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, s.db)
	if schema != "" {
		u += "&search_path=" + schema
	}
	return u
}

func get() (*server, error) {
	mu.Lock()
	defer mu.Unlock()
	if !started {
		started = true
		srv, srvErr = startServer()
	}
	return srv, srvErr
}

// bins finds initdb and pg_ctl.
func bins() (initdb, pgCtl string, err error) {
	if i, err1 := exec.LookPath("initdb"); err1 == nil {
		if p, err2 := exec.LookPath("pg_ctl"); err2 == nil {
			return i, p, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "pg_ctl")
		if _, err := os.Stat(i); err == nil {
			if _, err := os.Stat(p); err == nil {
				return i, p, nil
			}
		}
	}
	return "", "", fmt.Errorf("initdb and pg_ctl are neither on PATH nor in /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

var nonWord = regexp.MustCompile(`[^a-z0-9_]+`)

func startServer() (*server, error) {
	initdb, pgCtl, err := bins()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "herald-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &server{dir: dir, pgCtl: pgCtl}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.asUser = "postgres"
	}
	if out, err := s.run(initdb, "-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := s.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.db = "herald_" + strings.Trim(nonWord.ReplaceAllString(strings.ToLower(strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")), "_"), "_")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port))
	if err != nil {
		s.stop()
		return nil, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{s.db}.Sanitize()); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) start() error {
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories='' -c max_connections=400 "+
		"-c fsync=off -c full_page_writes=off -c shared_buffers=32MB", s.port)
	if out, err := s.ctl("start", "-w", "-t", "60", "-l", filepath.Join(s.dir, "log"), "-o", opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	return nil
}

func (s *server) ctl(args ...string) ([]byte, error) {
	return s.run(s.pgCtl, append([]string{"-D", filepath.Join(s.dir, "data")}, args...)...)
}

func (s *server) run(bin string, args ...string) ([]byte, error) {
	var cmd *exec.Cmd
	if s.asUser != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.asUser, "--", bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	cmd.Dir = s.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

func (s *server) stop() {
	_, _ = s.ctl("stop", "-m", "immediate")
	_ = os.RemoveAll(s.dir)
}
