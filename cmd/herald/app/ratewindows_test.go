package app_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/persistence"
)

// A restart does not refill the API quota: the window's count and reset time go on where they
// were, and a spent quota stays spent. While the server runs, the windows reach the store every
// RateSnapshotEvery, so that a crash forgets at most that interval's requests.
func TestRestartKeepsTheAPIQuota(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := app.Config{Addr: "127.0.0.1:0", DataDir: dir, Log: discardLog(), NoAdminSocket: true,
		PlanLimits: map[string]int{"free": 8}, RateSnapshotEvery: 50 * time.Millisecond}
	start := func() *app.App {
		a, err := app.New(cfg)
		require.NoError(t, err)
		require.NoError(t, a.Start(context.Background()))
		return a
	}
	a := start()
	_, err := auth.CreateUser(context.Background(), a.Store, auth.NewUser{Email: "quota@example.com", Plan: "free"}, time.Now())
	require.NoError(t, err)
	k, err := auth.CreateKey(context.Background(), a.Store, "quota@example.com", "k", 0, time.Now())
	require.NoError(t, err)
	me := func(a *app.App) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, a.URL()+"/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+k.Key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	for i := 0; i < 5; i++ {
		require.Equal(t, 200, me(a).StatusCode)
	}
	// The periodic snapshot stores the window while the server runs.
	require.Eventually(t, func() bool {
		var ws []persistence.RateWindow
		_ = a.Store.View(func(tx *persistence.Tx) error { ws = tx.RateWindows(); return nil })
		return len(ws) == 1 && ws[0].Used == 5
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, 200, me(a).StatusCode)
	first := me(a)
	require.Equal(t, "1", first.Header.Get("RateLimit-Remaining"))
	reset, err := strconv.Atoi(first.Header.Get("RateLimit-Reset"))
	require.NoError(t, err)
	// A record of a window that has closed by the next start is forgotten there.
	require.NoError(t, a.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		return tx.PutRateWindows([]persistence.RateWindow{{UserID: "gone", Start: time.Now().Add(-2 * time.Hour), Used: 3}})
	}))
	require.NoError(t, a.Shutdown())

	b := start()
	var stored []persistence.RateWindow
	require.NoError(t, b.Store.View(func(tx *persistence.Tx) error { stored = tx.RateWindows(); return nil }))
	require.Len(t, stored, 1)
	require.Equal(t, 7, stored[0].Used, "every open window is stored at shutdown")
	t.Cleanup(func() { _ = b.Shutdown() })
	r := me(b)
	require.Equal(t, 200, r.StatusCode)
	require.Equal(t, "0", r.Header.Get("RateLimit-Remaining"), "the eighth request of the window")
	after, err := strconv.Atoi(r.Header.Get("RateLimit-Reset"))
	require.NoError(t, err)
	require.LessOrEqual(t, after, reset, "the window did not start again")
	require.Equal(t, http.StatusTooManyRequests, me(b).StatusCode, "a spent quota stays spent")
}
