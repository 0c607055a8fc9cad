package job

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The backlog is what accounts hold and what waits in the store for accounts not held back by
// their budgets; an account's walk that reaches the end sets its part to what it holds.
func TestBacklogCountsWhatWaitsForAccountsNotHeldBack(t *testing.T) {
	b := NewBacklog(10)
	b.Queued("a", 4)
	b.Queued("b", 3)
	require.Equal(t, 7, b.Len())
	b.Taken("a", 2, false, 0)
	b.Add(2) // a holds them
	require.Equal(t, 7, b.Len())
	b.Held("b", true)
	require.Equal(t, 4, b.Len(), "b's budget holds its three back")
	b.Queued("b", 5)
	require.Equal(t, 4, b.Len())
	require.False(t, b.Full())
	b.Queued("c", 6)
	require.True(t, b.Full())
	b.Held("b", false)
	require.Equal(t, 18, b.Len())
	mark := b.Mark("c")
	b.Taken("c", 1, true, mark) // c's walk reached the end: a count that drifted comes right
	b.Add(1)
	require.Equal(t, 13, b.Len())
	mark = b.Mark("c")
	b.Queued("c", 2) // written while c reads: perhaps after its snapshot
	b.Taken("c", 0, true, mark)
	require.Equal(t, 15, b.Len(), "what was queued during the read stays counted")
	mark = b.Mark("c")
	b.Taken("c", 2, true, mark)
	require.Equal(t, 13, b.Len())
	b.Taken("a", 5, false, 0) // never below zero
	require.Equal(t, 11, b.Len())
	b.Set(map[string]int{"d": 2})
	require.Equal(t, 5, b.Len(), "a start-up counts the store again; what accounts hold stays")
	var nothing *Backlog
	nothing.Queued("a", 1)
	nothing.Held("a", true)
	require.Zero(t, nothing.Len())
	require.False(t, NewBacklog(0).Full())
}
