package persistence

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The store's tests run over every store below, as nomad runs its state store tests over each of
// its backends: plain bbolt, and bbolt behind the fault injector (faults.go) after commits failed
// and the faults were cleared, which must behave as if nothing had happened. Issue 21 adds its
// backends to this table.
var suiteStores = []struct {
	name string
	open func(t *testing.T) *Store
}{
	{"bbolt", func(t *testing.T) *Store { return openSuiteStore(t, nil) }},
	{"faults", func(t *testing.T) *Store {
		f := &Faults{}
		s := openSuiteStore(t, f)
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
	}},
}

func openSuiteStore(t *testing.T, f *Faults) *Store {
	t.Helper()
	var mu sync.Mutex
	s, err := Open(t.TempDir(), Options{Faults: f, OnCommit: func(int, time.Duration, error) { mu.Lock(); mu.Unlock() }})
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
