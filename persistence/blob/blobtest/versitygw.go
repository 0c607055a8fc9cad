// Package blobtest starts a real S3-compatible server for tests: versitygw with its posix backend
// on a temporary directory, listening on loopback. `.ci/run` installs it
// (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0). Without it the S3 tests are
// skipped on a developer's machine, and fail under CI=true.
package blobtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/heraldhq/herald/persistence/blob"
)

// Credentials and region of the servers this package starts.
const (
	AccessKey = "herald-test-access"
	SecretKey = "herald-test-secret-key"
	Region    = "us-east-1"
)

// Server is a running versitygw.
type Server struct {
	// Endpoint is its URL, http://127.0.0.1:PORT.
	Endpoint string
	// Root is the directory it serves: one sub-directory per bucket.
	Root string
	cmd  *exec.Cmd
	done chan struct{}
	out  *bytes.Buffer
}

// Binary finds the versitygw executable: on PATH, else in $GOBIN, $GOPATH/bin or ~/go/bin.
func Binary() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if d := os.Getenv("GOPATH"); d != "" {
		dirs = append(dirs, filepath.Join(d, "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "versitygw")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("versitygw is not installed (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)")
}

// Start starts versitygw on loopback for the test and stops it at the test's end. Without the
// binary the test is skipped, or fails when CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("S3 tests need versitygw under CI: %v", err)
		}
		t.Skipf("skipping the S3 test: %v", err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := start(t, bin)
		if err == nil {
			t.Cleanup(s.stop)
			return s
		}
		lastErr = err
	}
	t.Fatalf("versitygw did not start: %v", lastErr)
	return nil
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

func start(t testing.TB, bin string) (*Server, error) {
	root := filepath.Join(t.TempDir(), "s3")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Endpoint: "http://" + addr, Root: root, done: make(chan struct{}), out: &bytes.Buffer{}}
	s.cmd = exec.Command(bin, "--port", addr, "--access", AccessKey, "--secret", SecretKey, "--region", Region, "--quiet", "posix", root)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	// Ready when it accepts connections; give up if it exits (a port taken meanwhile) or after 20s.
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("versitygw exited: %s", s.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("versitygw did not listen on %s within 20s", addr)
		}
	}
}

func (s *Server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Client is a minio client of the server.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Endpoint[len("http://"):], &minio.Options{
		Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), Region: Region, BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Bucket creates a bucket and returns the S3 configuration that uses it.
func (s *Server) Bucket(t testing.TB, name string) blob.S3Config {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Client(t).MakeBucket(ctx, name, minio.MakeBucketOptions{Region: Region}); err != nil {
		t.Fatalf("make bucket %s: %v", name, err)
	}
	return blob.S3Config{Endpoint: s.Endpoint, Bucket: name, Region: Region, AccessKey: AccessKey, SecretKey: SecretKey, PathStyle: true}
}
