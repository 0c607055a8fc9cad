package blobtest

import (
	"runtime"
	"testing"
)

// recorder is a testing.TB that records Fatal and Skip instead of ending the test.
type recorder struct {
	testing.TB
	fatal, skipped bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.fatal = true; runtime.Goexit() }
func (r *recorder) Skipf(string, ...any)  { r.skipped = true; runtime.Goexit() }

func startWithout(t *testing.T, ci string) *recorder {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("GOBIN", "")
	t.Setenv("GOPATH", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("CI", ci)
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(r)
	}()
	<-done
	return r
}

// Without versitygw the S3 tests skip on a developer's machine and fail under CI=true.
func TestMissingServerFailsUnderCI(t *testing.T) {
	r := startWithout(t, "true")
	if !r.fatal || r.skipped {
		t.Fatalf("under CI=true a missing versitygw must fail the test (fatal=%v skipped=%v)", r.fatal, r.skipped)
	}
	r = startWithout(t, "")
	if r.fatal || !r.skipped {
		t.Fatalf("outside CI a missing versitygw must skip the test (fatal=%v skipped=%v)", r.fatal, r.skipped)
	}
}
