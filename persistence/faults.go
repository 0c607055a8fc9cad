package persistence

import (
	"errors"
	"fmt"
	"sync"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// ErrWriteFailed marks a write the store could not make durable: the commit of its transaction
// failed (disk full, I/O error), so nothing of it was kept and nothing of it is visible. The
// cause is wrapped with it (errors.Is(err, syscall.ENOSPC) tells a full disk when the file
// system reported it so). Such a write may be retried as it is once the store can write again:
// the store needs no reopening.
var ErrWriteFailed = errors.New("persistence: the store could not write")

// writeFailed wraps a commit's failure.
func writeFailed(err error) error {
	if errors.Is(err, ErrWriteFailed) {
		return err
	}
	return fmt.Errorf("%w: commit: %w", ErrWriteFailed, err)
}

// committer is the commit boundary of the store: the backend that runs one write transaction
// and commits it, or one read transaction. update commits what fn wrote when fn returns nil; when
// fn fails or the commit fails, nothing of the transaction is kept and the error is returned. The
// group committer commits every batch through it, so a wrapper of it sees every commit: the fault
// injector (Faults) is one, and another backend under the same Tx is another.
type committer interface {
	update(fn func(*Tx) error) error
	view(fn func(*Tx) error) error
}

// boltCommitter is bbolt's commit boundary.
type boltCommitter struct{ db *bolt.DB }

func (b boltCommitter) update(fn func(*Tx) error) error {
	return b.db.Update(func(tx *bolt.Tx) error { return fn(&Tx{kv: newBoltTx(tx)}) })
}

func (b boltCommitter) view(fn func(*Tx) error) error {
	return b.db.View(func(tx *bolt.Tx) error { return fn(&Tx{kv: newBoltTx(tx)}) })
}

// Faults injects storage failures at the store's commit boundary, for tests of what Herald does
// when its storage fails (Options.Faults). A commit it fails has run every write of its batch and
// is then rolled back instead of committed. bbolt's Tx.Commit rolls back the same way when writing
// or syncing the file fails, so the store and its callers see what they see then: nothing of the
// batch is kept, every writer of the batch gets the error wrapped with ErrWriteFailed, and the
// next commit is tried as usual. (bbolt's own failing Commit is exercised on a real full file
// system by cmd/herald/app's TestFullDiskRefusesWritesAndRecovers.) Reads may be failed too. The
// zero value injects nothing; its methods are safe for concurrent use.
type Faults struct {
	mu sync.Mutex
	// commits fails every commit while set.
	commits error
	// next fails the next n commits with nextErr.
	next    int
	nextErr error
	// views fails every read transaction while set.
	views error
	// injected counts the commits failed.
	injected int
}

// defaultFault is what a fault armed with a nil error fails with.
var defaultFault = syscall.EIO

// FailCommits fails every commit with err (syscall.EIO when nil) until ClearCommits or Clear.
func (f *Faults) FailCommits(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits = orFault(err)
}

// FailNextCommits fails the next n commits with err (syscall.EIO when nil); later ones succeed.
func (f *Faults) FailNextCommits(n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next, f.nextErr = n, orFault(err)
}

// ClearCommits lets commits succeed again.
func (f *Faults) ClearCommits() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits, f.next, f.nextErr = nil, 0, nil
}

// FailViews fails every read transaction with err (syscall.EIO when nil) until Clear.
func (f *Faults) FailViews(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.views = orFault(err)
}

// Clear ends every fault: commits and reads succeed again.
func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits, f.next, f.nextErr, f.views = nil, 0, nil, nil
}

// Injected counts the commits failed so far.
func (f *Faults) Injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected
}

func orFault(err error) error {
	if err == nil {
		return defaultFault
	}
	return err
}

// commitFault returns the error the commit about to happen fails with, nil when it may succeed.
func (f *Faults) commitFault() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.commits
	if err == nil && f.next > 0 {
		f.next--
		err = f.nextErr
	}
	if err != nil {
		f.injected++
	}
	return err
}

func (f *Faults) viewFault() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.views
}

// wrap puts the injector in front of a commit boundary; a nil Faults wraps nothing.
func (f *Faults) wrap(c committer) committer {
	if f == nil {
		return c
	}
	return faultyCommitter{inner: c, f: f}
}

// faultyCommitter fails the commits and reads its Faults say to fail. A failed commit runs fn in
// full, then fails the transaction at the point where it would commit; the backend rolls it back
// as it rolls back any transaction whose commit fails.
type faultyCommitter struct {
	inner committer
	f     *Faults
}

func (c faultyCommitter) update(fn func(*Tx) error) error {
	return c.inner.update(func(tx *Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return c.f.commitFault()
	})
}

func (c faultyCommitter) view(fn func(*Tx) error) error {
	if err := c.f.viewFault(); err != nil {
		return err
	}
	return c.inner.view(fn)
}
