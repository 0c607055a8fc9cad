package account

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

func TestBudgetWindows(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		rules []Rule
		n     int // publishes allowed in the first window
	}{
		{"one rule", []Rule{{Name: "a", Limit: 5, Window: time.Minute, Cost: 1}}, 5},
		{"cost", []Rule{{Name: "a", Limit: 10, Window: time.Minute, Cost: 3}}, 3},
		{"tightest of two", []Rule{{Name: "a", Limit: 10, Window: time.Minute, Cost: 1}, {Name: "b", Limit: 4, Window: time.Hour, Cost: 1}}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := NewBudgets(map[platforms.Platform][]Rule{platforms.X: tc.rules})
			for i := 0; i < tc.n; i++ {
				ok, _ := b.Reserve(platforms.X, "acct", now)
				require.True(t, ok, "publish %d", i)
			}
			ok, retry := b.Reserve(platforms.X, "acct", now)
			require.False(t, ok)
			require.True(t, retry.After(now))
			require.Equal(t, 0, b.Remaining(platforms.X, "acct", now))
			ok, _ = b.Reserve(platforms.X, "other", now)
			require.True(t, ok, "another account has its own windows")
		})
	}
}

func TestBudgetResetsWithMarginAndRefunds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := NewBudgets(map[platforms.Platform][]Rule{platforms.X: {{Name: "a", Limit: 2, Window: time.Minute, Cost: 1}}})
	b.Reserve(platforms.X, "acct", now)
	b.Reserve(platforms.X, "acct", now)
	ok, retry := b.Reserve(platforms.X, "acct", now.Add(time.Minute))
	require.False(t, ok, "the window closes only after the margin")
	require.Equal(t, now.Add(time.Minute+600*time.Millisecond), retry)
	ok, _ = b.Reserve(platforms.X, "acct", retry)
	require.True(t, ok)
	b.Refund(platforms.X, "acct")
	require.Equal(t, 2, b.Remaining(platforms.X, "acct", retry))
}

// A window the network opens with the first call, sent after the reservation, closes for Herald
// a window after that call (with the margin), not after the reservation; later calls of the same
// window move nothing.
func TestBudgetWindowFollowsItsFirstCall(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := NewBudgets(map[platforms.Platform][]Rule{platforms.LinkedIn: {{Name: "posts", Limit: 2, Window: time.Minute, Cost: 1}}})
	for range 2 {
		ok, _ := b.Reserve(platforms.LinkedIn, "acct", now)
		require.True(t, ok)
	}
	_, retry := b.Reserve(platforms.LinkedIn, "acct", now)
	require.Equal(t, now.Add(time.Minute+600*time.Millisecond), retry)
	b.Sent(platforms.LinkedIn, "acct", now.Add(2*time.Second)) // the first call, 2 s after
	b.Sent(platforms.LinkedIn, "acct", now.Add(5*time.Second)) // the second
	ok, retry := b.Reserve(platforms.LinkedIn, "acct", now.Add(time.Minute+time.Second))
	require.False(t, ok, "the network's window is still open")
	require.Equal(t, now.Add(time.Minute+2600*time.Millisecond), retry)
	ok, _ = b.Reserve(platforms.LinkedIn, "acct", retry)
	require.True(t, ok)
}

func TestBudgetObservesNetworkSignals(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := NewBudgets(map[platforms.Platform][]Rule{platforms.X: {{Name: "a", Limit: 100, Window: 15 * time.Minute, Cost: 1}}})
	b.Observe(platforms.X, "acct", platforms.RateInfo{Known: true, Limit: 100, Remaining: 1, Reset: now.Add(20 * time.Minute)}, now)
	require.Equal(t, 1, b.Remaining(platforms.X, "acct", now))
	ok, _ := b.Reserve(platforms.X, "acct", now)
	require.True(t, ok)
	ok, retry := b.Reserve(platforms.X, "acct", now)
	require.False(t, ok)
	require.False(t, retry.Before(now.Add(20*time.Minute)), "the network's reset wins")

	b.Block(platforms.X, "other", now.Add(time.Hour), false)
	ok, retry = b.Reserve(platforms.X, "other", now)
	require.False(t, ok)
	require.Equal(t, now.Add(time.Hour), retry)

	yt := NewBudgets(ScaleRules(DefaultRules, 1))
	for i := 0; i < 6; i++ {
		ok, _ := yt.Reserve(platforms.YouTube, "acct"+string(rune('a'+i)), now)
		require.True(t, ok)
	}
	ok, _ = yt.Reserve(platforms.YouTube, "acct-z", now)
	require.False(t, ok, "YouTube's units are the project's, shared by every channel")
}

// X allows 10,000 posts a day per app whatever the number of accounts: the hundred-and-first
// account to post 100 times in a day waits for the app's window, though its own is untouched.
func TestXAppLimitIsSharedByEveryAccount(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := NewBudgets(DefaultRules)
	for a := 0; a < 100; a++ {
		for i := 0; i < 100; i++ {
			ok, _ := b.Reserve(platforms.X, fmt.Sprintf("acct-%d", a), now)
			require.True(t, ok, "account %d, post %d", a, i)
		}
	}
	ok, retry := b.Reserve(platforms.X, "acct-100", now)
	require.False(t, ok, "the app's 10,000 a day are spent")
	require.False(t, retry.Before(now.Add(24*time.Hour)), "the app's window is a day: %s", retry)
	require.Equal(t, 0, b.Remaining(platforms.X, "acct-100", now))
	// A reply is a POST /2/tweets too.
	ok, _ = b.reserveOp(platforms.X, "acct-100", OpReply, DefaultReadRules[platforms.X][OpReply], 1, now)
	require.False(t, ok, "a reply spends the same app budget")
}

// Pinterest refuses a user's 101st call of a second, whatever its category: the hundred Pins a
// minute allows could all go out within one second, and a read of the account's boards (a post's
// board checked) in that second must wait for the next one instead of taking a 429.
func TestPinterestCallsOfOneSecondStayUnderItsUniversalLimit(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	b := NewBudgets(DefaultRules)
	for i := 0; i < 100; i++ {
		ok, _ := b.Reserve(platforms.Pinterest, "acct-p", now.Add(time.Duration(i)*time.Millisecond))
		require.True(t, ok, "Pin %d", i)
	}
	ok, retry := b.reserveOp(platforms.Pinterest, "acct-p", OpChoices, DefaultReadRules[platforms.Pinterest][OpChoices], 1, now.Add(500*time.Millisecond))
	require.False(t, ok, "the second's 100 calls are spent")
	require.False(t, retry.Before(now.Add(time.Second)), "the window is a second from the first call: %s", retry)
	ok, _ = b.reserveOp(platforms.Pinterest, "acct-p", OpChoices, DefaultReadRules[platforms.Pinterest][OpChoices], 1, retry)
	require.True(t, ok, "a read goes in the next second")

	// With writes allowed beyond 100 a minute, the second still binds the Pins themselves.
	rules, err := OverrideRules(DefaultRules, "pinterest:org_write=1000/1m0s")
	require.NoError(t, err)
	b = NewBudgets(rules)
	for i := 0; i < 100; i++ {
		ok, _ := b.Reserve(platforms.Pinterest, "acct-q", now)
		require.True(t, ok, "Pin %d", i)
	}
	ok, _ = b.Reserve(platforms.Pinterest, "acct-q", now.Add(900*time.Millisecond))
	require.False(t, ok, "the 101st Pin of the second waits")
	ok, _ = b.Reserve(platforms.Pinterest, "acct-z", now)
	require.True(t, ok, "another user's second is its own")
}
