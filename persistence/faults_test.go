package persistence

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// commitLog records what Options.OnCommit observed.
type commitLog struct {
	mu      sync.Mutex
	commits []observed
}

type observed struct {
	writes int
	err    error
}

func (l *commitLog) observe(n int, _ time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.commits = append(l.commits, observed{n, err})
}

func (l *commitLog) all() []observed {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]observed(nil), l.commits...)
}

// commit is what a test compares of an observed commit.
type commit struct {
	writes int
	failed bool
}

// shape returns the observed commits' sizes and outcomes; every failure must wrap
// ErrWriteFailed.
func (l *commitLog) shape(t *testing.T) []commit {
	t.Helper()
	var out []commit
	for _, o := range l.all() {
		if o.err != nil {
			require.ErrorIs(t, o.err, ErrWriteFailed)
		}
		out = append(out, commit{o.writes, o.err != nil})
	}
	return out
}

func openFaulty(t *testing.T) (*Store, *Faults, *commitLog) {
	t.Helper()
	f, log := &Faults{}, &commitLog{}
	s, err := Open(t.TempDir(), Options{Faults: f, OnCommit: log.observe})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, f, log
}

// holdCommitter keeps the committer inside a write until release is called, so that the writes
// queued meanwhile make up the next batch, which commits alone. done answers the held write.
func holdCommitter(t *testing.T, s *Store) (release func(), done <-chan error) {
	t.Helper()
	entered, held, out := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var once sync.Once
	go func() {
		out <- s.Update(context.Background(), func(*Tx) error {
			once.Do(func() { close(entered); <-held })
			return nil
		})
	}()
	<-entered
	return func() { close(held) }, out
}

// waitQueued waits until n writes wait for the committer.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.writes) < n {
		require.True(t, time.Now().Before(deadline), "%d writes queued, want %d", len(s.writes), n)
		time.Sleep(time.Millisecond)
	}
}

func postFor(user string) *Post {
	return &Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user, Content: "hello", Status: PostDraft,
		Targets: []Target{{AccountID: uuid.NewString(), Platform: "bluesky", Status: TargetPending}}, CreatedAt: time.Now().UTC()}
}

// checkFile runs bbolt's consistency check over the file.
func checkFile(t *testing.T, s *Store) {
	t.Helper()
	require.NoError(t, s.db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}))
}

// A batch whose commit fails answers every one of its writers with the failure, wrapped with
// ErrWriteFailed, and keeps nothing of any of them; once the fault is gone the same writes
// commit, on the same open store.
func TestFailedCommitFailsEveryWriterOfItsBatch(t *testing.T) {
	t.Parallel()
	s, f, log := openFaulty(t)
	user := uuid.NewString()
	f.FailCommits(syscall.ENOSPC)

	release, heldDone := holdCommitter(t, s)
	const n = 99
	posts := make([]*Post, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range posts {
		posts[i] = postFor(user)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = s.Update(context.Background(), func(tx *Tx) error { return tx.PutPost(posts[i], nil) })
		}(i)
	}
	waitQueued(t, s, n)
	release()
	wg.Wait()
	require.ErrorIs(t, <-heldDone, ErrWriteFailed)
	for i, err := range errs {
		require.ErrorIs(t, err, ErrWriteFailed, "write %d", i)
		require.ErrorIs(t, err, syscall.ENOSPC, "write %d: the cause is kept", i)
	}
	require.Equal(t, []commit{{1, true}, {n, true}}, log.shape(t), "two failed commits: the held write, then the batch of %d", n)
	require.Equal(t, 2, f.Injected())
	require.NoError(t, s.View(func(tx *Tx) error {
		_, total, err := tx.ListPosts(PostFilter{Scope: user, Limit: 1})
		require.Zero(t, total, "nothing of the failed batch is visible")
		for _, p := range posts {
			require.False(t, tx.HasPost(p.ID))
		}
		return err
	}))
	checkFile(t, s)

	f.ClearCommits()
	for _, p := range posts {
		require.NoError(t, s.Update(context.Background(), func(tx *Tx) error { return tx.PutPost(p, nil) }))
	}
	require.NoError(t, s.View(func(tx *Tx) error {
		_, total, err := tx.ListPosts(PostFilter{Scope: user, Limit: 1})
		require.Equal(t, n, total)
		return err
	}))
	shape := log.shape(t)
	require.Len(t, shape, 2+n)
	require.Equal(t, commit{1, false}, shape[len(shape)-1])
	checkFile(t, s)
}

// FailNextCommits fails that many commits, then lets them succeed; the probe write follows.
func TestFailNextCommitsThenRecover(t *testing.T) {
	t.Parallel()
	s, f, log := openFaulty(t)
	ctx := context.Background()
	f.FailNextCommits(2, nil)
	for range 2 {
		err := s.Probe(ctx)
		require.ErrorIs(t, err, ErrWriteFailed)
		require.ErrorIs(t, err, syscall.EIO, "EIO when no error is given")
	}
	require.NoError(t, s.Probe(ctx))
	require.Equal(t, 2, f.Injected())
	require.Equal(t, []commit{{1, true}, {1, true}, {1, false}}, log.shape(t))
}

// A write refused by its own function is no failure of the store: OnCommit sees the others'
// commits, and no error. A commit that fails while the batch is replayed fails that write only,
// as a store failure.
func TestRefusedWriteIsNotAStoreFailure(t *testing.T) {
	t.Parallel()
	s, f, log := openFaulty(t)
	user := uuid.NewString()
	refusal := errors.New("refused")
	run := func(fail bool) (held, refused, good, third error) {
		release, heldDone := holdCommitter(t, s)
		if fail {
			// The held write's commit fails; the batch below rolls back at the refusal, before
			// its commit; of the replays, the second write's commit (the refused one never
			// commits) fails.
			f.FailNextCommits(2, syscall.EIO)
		}
		var wg sync.WaitGroup
		out := make([]error, 3)
		for i := range out {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				p := postFor(user)
				out[i] = s.Update(context.Background(), func(tx *Tx) error {
					if err := tx.PutPost(p, nil); err != nil {
						return err
					}
					if i == 0 {
						return refusal
					}
					return nil
				})
			}(i)
			waitQueued(t, s, i+1) // in this order
		}
		release()
		wg.Wait()
		return <-heldDone, out[0], out[1], out[2]
	}

	held, refused, good, third := run(false)
	require.NoError(t, held)
	require.ErrorIs(t, refused, refusal)
	require.NotErrorIs(t, refused, ErrWriteFailed)
	require.NoError(t, good)
	require.NoError(t, third)
	require.Equal(t, []commit{{1, false}, {1, false}, {1, false}}, log.shape(t), "the held write, then the two replayed commits")

	held, refused, good, third = run(true)
	require.ErrorIs(t, held, ErrWriteFailed)
	require.ErrorIs(t, refused, refusal)
	require.NotErrorIs(t, refused, ErrWriteFailed)
	require.ErrorIs(t, good, ErrWriteFailed)
	require.ErrorIs(t, good, syscall.EIO)
	require.NoError(t, third)
	require.Equal(t, []commit{{1, false}, {1, false}, {1, false}, {1, true}, {1, true}, {1, false}}, log.shape(t))
	require.Equal(t, 2, f.Injected())
	require.NoError(t, s.View(func(tx *Tx) error {
		_, total, err := tx.ListPosts(PostFilter{Scope: user, Limit: 1})
		require.Equal(t, 3, total, "the first round's two and the third write of the second")
		return err
	}))
}

// Failed reads fail View only; writes go on, and once cleared the reads see them.
func TestFailViews(t *testing.T) {
	t.Parallel()
	s, f, _ := openFaulty(t)
	f.FailViews(syscall.EIO)
	p := postFor(uuid.NewString())
	require.ErrorIs(t, s.View(func(*Tx) error { return nil }), syscall.EIO)
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error { return tx.PutPost(p, nil) }))
	_, _, err := s.AccountPlatform(p.UserID, uuid.NewString())
	require.ErrorIs(t, err, syscall.EIO, "the account cache reads through the same boundary")
	f.Clear()
	require.NoError(t, s.View(func(tx *Tx) error {
		require.True(t, tx.HasPost(p.ID))
		return nil
	}))
}
