package persistence

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/persistence/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The store's tests run over every store below, as nomad runs its state store tests over each of
// its backends: plain bbolt, PostgreSQL (postgres.go, on a server that pgtest starts), and each of
// them behind the fault injector (faults.go) after commits failed and the faults were cleared,
// which must behave as if nothing had happened.
var suiteStores = []struct {
	name string
	open func(t *testing.T) *Store
}{
	{"bbolt", func(t *testing.T) *Store { return openSuiteStore(t, nil) }},
	{"faults", func(t *testing.T) *Store { return afterFaults(t, openSuiteStore) }},
	{"postgres", func(t *testing.T) *Store { return openSuitePostgres(t, nil) }},
	{"postgres-faults", func(t *testing.T) *Store { return afterFaults(t, openSuitePostgres) }},
}

// afterFaults opens a store behind the fault injector and fails two commits of it.
func afterFaults(t *testing.T, open func(*testing.T, *Faults) *Store) *Store {
	f := &Faults{}
	s := open(t, f)
	f.FailNextCommits(2, syscall.EIO)
	for range 2 {
		if err := s.Probe(context.Background()); !errors.Is(err, ErrWriteFailed) || !errors.Is(err, syscall.EIO) {
			t.Fatalf("an injected commit failure gave %v", err)
		}
	}
	if f.Injected() != 2 {
		t.Fatalf("%d commits failed, not 2", f.Injected())
	}
	return s
}

func openSuitePostgres(t *testing.T, f *Faults) *Store {
	t.Helper()
	s, err := OpenPostgres(context.Background(), pgtest.URL(t), Options{Faults: f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func openSuiteStore(t *testing.T, f *Faults) *Store {
	t.Helper()
	// The commit hook is set (and does nothing) so that the suite runs the committer's path that
	// reports every commit.
	s, err := Open(t.TempDir(), Options{Faults: f, OnCommit: func(int, time.Duration, error) {}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// EachStore runs test once over each store of the suite, as parallel subtests.
func EachStore(t *testing.T, test func(t *testing.T, s *Store)) {
	t.Helper()
	t.Parallel()
	for _, st := range suiteStores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			test(t, st.open(t))
		})
	}
}
