package oauth_test

import (
	"context"
	"crypto/rand"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/oauth"
	"github.com/heraldhq/herald/persistence"
)

func counts(h *apptest.OAuth) (clients, codes, tokens int) {
	h.T.Helper()
	require.NoError(h.T, h.App.Store.View(func(tx *persistence.Tx) error {
		clients, codes, tokens = tx.CountOAuth()
		return nil
	}))
	return
}

// putExpiredCodes stores n unused codes that expired an hour ago.
func putExpiredCodes(h *apptest.OAuth, n int) {
	h.T.Helper()
	require.NoError(h.T, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		for range n {
			hash := make([]byte, 32)
			_, _ = rand.Read(hash)
			if err := tx.PutOAuthCode(hash, &persistence.OAuthCode{ClientID: h.ClientID, KeyID: "0190a000-0000-7000-8000-000000000000",
				ExpiresAt: h.Clock.Now().Add(-time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	}))
}

func TestOAuthSweep(t *testing.T) {
	t.Parallel()
	h := apptest.StartOAuth(t, apptest.Options{})
	ctx := context.Background()
	sweep := func() oauth.Swept {
		t.Helper()
		w, err := h.App.OAuth.Sweep(ctx)
		require.NoError(t, err)
		return w
	}
	unused := h.Register("Never used")
	// Approved below, never exchanged: Claude again, returning elsewhere (another client).
	rr := h.Post("/oauth/register", "application/json", `{"client_name":"Claude","redirect_uris":["`+h.Redirect+`/other"]}`)
	require.Equal(t, 201, rr.Status, string(rr.Body))
	other := rr.JSON(t)["client_id"].(string)

	// Grant B, then grant A for the same client: approving again revoked B's connector key.
	h.Grant(h.URL, "")
	a := h.Grant(h.URL, "")
	r := h.Token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {a["refresh_token"].(string)}, "client_id": {h.ClientID}})
	require.Equal(t, 200, r.Status, string(r.Body))
	a = r.JSON(t) // the first refresh token is rotated, kept for reuse detection
	// A code approved for the other client and never exchanged.
	_, challenge := apptest.PKCEPair("u")
	q := h.AuthRequest(challenge, h.URL, "")
	q.Set("client_id", other)
	q.Set("redirect_uri", h.Redirect+"/other")
	require.NotEmpty(t, h.Consent(h.SignedIn(), q, "approve").Get("code"))
	clients, codes, tokens := counts(h)
	require.Equal(t, []int{3, 3, 6}, []int{clients, codes, tokens})

	// Now: only the revoked grant's access and refresh tokens go.
	require.Equal(t, oauth.Swept{AccessTokens: 1, RefreshTokens: 1}, sweep())
	require.Equal(t, 200, h.DoKey(a["access_token"].(string), "GET", "/v1/me", nil, nil).Status)

	// Past 60 seconds: the unused code and the revoked grant's used code; the live grant's used
	// code stays, so that a replay of it still revokes the grant.
	h.Clock.Add(2 * time.Minute)
	require.Equal(t, oauth.Swept{Codes: 2}, sweep())

	// Past the hour: both access tokens of the live grant; its refresh tokens stay (the newest
	// for use, the rotated one for reuse detection), and the refresh still works.
	h.Clock.Add(time.Hour)
	require.Equal(t, oauth.Swept{AccessTokens: 2}, sweep())
	r = h.Token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {a["refresh_token"].(string)}, "client_id": {h.ClientID}})
	require.Equal(t, 200, r.Status, string(r.Body))
	a = r.JSON(t)
	require.Equal(t, 200, h.DoKey(a["access_token"].(string), "GET", "/v1/me", nil, nil).Status)

	// Twenty hours on, another client registers and is never used.
	h.Clock.Add(20 * time.Hour)
	late := h.Register("Late")
	require.Equal(t, oauth.Swept{AccessTokens: 1}, sweep())

	// A day after the start: the client that was never approved goes; the two that grants name
	// and the late one stay.
	h.Clock.Add(3 * time.Hour)
	require.Equal(t, oauth.Swept{Clients: 1}, sweep())
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		for id, want := range map[string]bool{unused: false, h.ClientID: true, other: true, late: true} {
			_, err := tx.OAuthClient(id)
			require.Equal(t, want, err == nil, id)
		}
		return nil
	}))

	// Thirty days on: every refresh token has expired, and the late client is gone too.
	h.Clock.Add(30 * 24 * time.Hour)
	require.Equal(t, oauth.Swept{RefreshTokens: 3, Clients: 1}, sweep())
	clients, codes, tokens = counts(h)
	require.Equal(t, []int{2, 1, 0}, []int{clients, codes, tokens})

	// Each transaction deletes at most 500 records of a bucket.
	putExpiredCodes(h, 1200)
	require.Equal(t, oauth.Swept{Codes: 500}, sweep())
	require.Equal(t, oauth.Swept{Codes: 500}, sweep())
	require.Equal(t, oauth.Swept{Codes: 200}, sweep())

	metrics := apptest.Scrape(t, h.App.MetricsURL())
	require.Contains(t, metrics, `herald_oauth_swept_total{record="code"} 1202`)
	require.Contains(t, metrics, `herald_oauth_swept_total{record="client"} 2`)
}

// The server sweeps on its own, every OAuthSweepEvery, until nothing is left to delete.
func TestOAuthSweepRuns(t *testing.T) {
	t.Parallel()
	h := apptest.StartOAuthNoClient(t, apptest.Options{Config: func(cfg *app.Config) { cfg.OAuthSweepEvery = 20 * time.Millisecond }})
	h.ClientID = h.Register("x")
	putExpiredCodes(h, 1100)
	h.Clock.Add(31 * 24 * time.Hour)
	require.Eventually(t, func() bool {
		clients, codes, _ := counts(h)
		return clients == 0 && codes == 0
	}, 10*time.Second, 20*time.Millisecond)
}
