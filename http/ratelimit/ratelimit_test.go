package ratelimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/ratelimit"
)

// A snapshot carries the open windows to another limiter: counts, reset times and refusals go on
// where they were.
func TestSnapshotRestoresOpenWindows(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := ratelimit.New(clock)
	for i := 0; i < 7; i++ {
		require.True(t, a.Take("alice", 10).Allowed)
	}
	for i := 0; i < 3; i++ {
		require.True(t, a.Take("bob", 3).Allowed)
	}
	entries := a.Snapshot(false)
	require.Len(t, entries, 2)
	require.Empty(t, a.Snapshot(false), "nothing counted since the last snapshot")
	require.True(t, a.Take("bob", 4).Allowed)
	changed := a.Snapshot(false)
	require.Len(t, changed, 1, "only the window that counted since")
	require.Equal(t, ratelimit.Entry{User: "bob", Start: now, Used: 4}, changed[0])
	require.Len(t, a.Snapshot(true), 2, "every open window when asked")

	now = now.Add(20 * time.Minute)
	b := ratelimit.New(clock)
	b.Restore(entries)
	d := b.Take("alice", 10)
	require.True(t, d.Allowed)
	require.Equal(t, 2, d.Remaining, "7 before the restart, 1 after")
	require.Equal(t, 40*time.Minute, d.Reset, "the window keeps its start")
	require.False(t, b.Take("bob", 3).Allowed, "a spent quota stays spent")
	require.Equal(t, "alice", b.Snapshot(false)[0].User, "restored windows are not stored again until they count")

	// A window that closed in the meantime is not restored.
	now = now.Add(time.Hour)
	c := ratelimit.New(clock)
	c.Restore(entries)
	d = c.Take("bob", 3)
	require.Equal(t, 2, d.Remaining)
	require.Equal(t, time.Hour, d.Reset)
}

// Restoring into a limiter that already counted keeps the larger count.
func TestRestoreKeepsTheLargerCount(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	l := ratelimit.New(func() time.Time { return now })
	for i := 0; i < 5; i++ {
		l.Take("carol", 100)
	}
	l.Restore([]ratelimit.Entry{{User: "carol", Start: now.Add(-time.Minute), Used: 2}, {User: "dave", Start: now.Add(time.Minute), Used: 9}, {User: "erin", Start: now, Used: 0}})
	require.Equal(t, 94, l.Take("carol", 100).Remaining)
	require.Equal(t, 99, l.Take("dave", 100).Remaining, "a window that opens in the future is ignored")
	require.Equal(t, 99, l.Take("erin", 100).Remaining)
}

// Peek reads a window without counting, and reports none once it has closed.
func TestPeekCountsNothing(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	l := ratelimit.New(func() time.Time { return now })
	used, reset := l.Peek("alice")
	require.Zero(t, used)
	require.Zero(t, reset)
	for i := 0; i < 3; i++ {
		require.True(t, l.Take("alice", 10).Allowed)
	}
	now = now.Add(15 * time.Minute)
	used, reset = l.Peek("alice")
	require.Equal(t, 3, used)
	require.Equal(t, 45*time.Minute, reset)
	used, _ = l.Peek("alice")
	require.Equal(t, 3, used, "peeking counts nothing")
	now = now.Add(time.Hour)
	used, reset = l.Peek("alice")
	require.Zero(t, used)
	require.Zero(t, reset)
}

// Return gives back one request of the open window, never below zero, and nothing once the
// window has closed.
func TestReturnGivesBackOneRequest(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	l := ratelimit.New(func() time.Time { return now })
	require.Equal(t, 1, l.Take("alice", 2).Remaining)
	require.Equal(t, 0, l.Take("alice", 2).Remaining)
	require.False(t, l.Take("alice", 2).Allowed)
	l.Return("alice")
	require.True(t, l.Take("alice", 2).Allowed, "the returned request is free again")
	l.Return("alice")
	l.Return("alice")
	l.Return("alice")
	used, _ := l.Peek("alice")
	require.Equal(t, 0, used)
	l.Return("bob") // no window: nothing
	used, _ = l.Peek("bob")
	require.Equal(t, 0, used)

	l.Take("alice", 2)
	now = now.Add(time.Hour)
	l.Return("alice") // the window closed
	require.Equal(t, 1, l.Take("alice", 2).Remaining, "a new window")
}
