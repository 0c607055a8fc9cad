package app_test

import (
	"context"
	"crypto/rand"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app"
	"github.com/heraldhq/herald/http/oauth"
	"github.com/heraldhq/herald/persistence"
)

func (b *oauthBundle) counts() (clients, codes, tokens int) {
	b.t.Helper()
	require.NoError(b.t, b.app.Store.View(func(tx *persistence.Tx) error {
		clients, codes, tokens = tx.CountOAuth()
		return nil
	}))
	return
}

func (b *oauthBundle) register(name string) string {
	b.t.Helper()
	r := b.post("/oauth/register", "application/json", `{"client_name":"`+name+`","redirect_uris":["`+b.redirect+`"]}`)
	require.Equal(b.t, 201, r.status, string(r.body))
	return r.json(b.t)["client_id"].(string)
}

// putExpiredCodes stores n unused codes that expired an hour ago.
func (b *oauthBundle) putExpiredCodes(n int) {
	b.t.Helper()
	require.NoError(b.t, b.app.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		for range n {
			h := make([]byte, 32)
			_, _ = rand.Read(h)
			if err := tx.PutOAuthCode(h, &persistence.OAuthCode{ClientID: b.clientID, KeyID: "0190a000-0000-7000-8000-000000000000",
				ExpiresAt: b.clock.Now().Add(-time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	}))
}

func TestOAuthSweep(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t)
	ctx := context.Background()
	sweep := func() oauth.Swept {
		t.Helper()
		w, err := b.app.OAuth.Sweep(ctx)
		require.NoError(t, err)
		return w
	}
	unused := b.register("Never used")
	// Approved below, never exchanged: Claude again, returning elsewhere (another client).
	rr := b.post("/oauth/register", "application/json", `{"client_name":"Claude","redirect_uris":["`+b.redirect+`/other"]}`)
	require.Equal(t, 201, rr.status, string(rr.body))
	other := rr.json(t)["client_id"].(string)

	// Grant B, then grant A for the same client: approving again revoked B's connector key.
	b.grant(b.url, "")
	a := b.grant(b.url, "")
	r := b.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {a["refresh_token"].(string)}, "client_id": {b.clientID}})
	require.Equal(t, 200, r.status, string(r.body))
	a = r.json(t) // the first refresh token is rotated, kept for reuse detection
	// A code approved for the other client and never exchanged.
	_, challenge := pkcePair("u")
	q := b.authRequest(challenge, b.url, "")
	q.Set("client_id", other)
	q.Set("redirect_uri", b.redirect+"/other")
	require.NotEmpty(t, b.consent(b.signedIn(), q, "approve").Get("code"))
	clients, codes, tokens := b.counts()
	require.Equal(t, []int{3, 3, 6}, []int{clients, codes, tokens})

	// Now: only the revoked grant's access and refresh tokens go.
	require.Equal(t, oauth.Swept{AccessTokens: 1, RefreshTokens: 1}, sweep())
	require.Equal(t, 200, b.doKey(a["access_token"].(string), "GET", "/v1/me", nil, nil).status)

	// Past 60 seconds: the unused code and the revoked grant's used code; the live grant's used
	// code stays, so that a replay of it still revokes the grant.
	b.clock.Add(2 * time.Minute)
	require.Equal(t, oauth.Swept{Codes: 2}, sweep())

	// Past the hour: both access tokens of the live grant; its refresh tokens stay (the newest
	// for use, the rotated one for reuse detection), and the refresh still works.
	b.clock.Add(time.Hour)
	require.Equal(t, oauth.Swept{AccessTokens: 2}, sweep())
	r = b.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {a["refresh_token"].(string)}, "client_id": {b.clientID}})
	require.Equal(t, 200, r.status, string(r.body))
	a = r.json(t)
	require.Equal(t, 200, b.doKey(a["access_token"].(string), "GET", "/v1/me", nil, nil).status)

	// Twenty hours on, another client registers and is never used.
	b.clock.Add(20 * time.Hour)
	late := b.register("Late")
	require.Equal(t, oauth.Swept{AccessTokens: 1}, sweep())

	// A day after the start: the client that was never approved goes; the two that grants name
	// and the late one stay.
	b.clock.Add(3 * time.Hour)
	require.Equal(t, oauth.Swept{Clients: 1}, sweep())
	require.NoError(t, b.app.Store.View(func(tx *persistence.Tx) error {
		for id, want := range map[string]bool{unused: false, b.clientID: true, other: true, late: true} {
			_, err := tx.OAuthClient(id)
			require.Equal(t, want, err == nil, id)
		}
		return nil
	}))

	// Thirty days on: every refresh token has expired, and the late client is gone too.
	b.clock.Add(30 * 24 * time.Hour)
	require.Equal(t, oauth.Swept{RefreshTokens: 3, Clients: 1}, sweep())
	clients, codes, tokens = b.counts()
	require.Equal(t, []int{2, 1, 0}, []int{clients, codes, tokens})

	// Each transaction deletes at most 500 records of a bucket.
	b.putExpiredCodes(1200)
	require.Equal(t, oauth.Swept{Codes: 500}, sweep())
	require.Equal(t, oauth.Swept{Codes: 500}, sweep())
	require.Equal(t, oauth.Swept{Codes: 200}, sweep())

	metrics := scrape(t, b.app.MetricsURL())
	require.Contains(t, metrics, `herald_oauth_swept_total{record="code"} 1202`)
	require.Contains(t, metrics, `herald_oauth_swept_total{record="client"} 2`)
}

// The server sweeps on its own, every OAuthSweepEvery, until nothing is left to delete.
func TestOAuthSweepRuns(t *testing.T) {
	t.Parallel()
	clock := &sessionClock{now: time.Now()}
	b := &oauthBundle{testBundle: setup(t, bundleOpts{config: func(cfg *app.Config) {
		cfg.OAuthClock = clock.Now
		cfg.OAuthSweepEvery = 20 * time.Millisecond
	}}), clock: clock, redirect: "http://127.0.0.1:7777/callback"}
	b.clientID = b.register("x")
	b.putExpiredCodes(1100)
	clock.Add(31 * 24 * time.Hour)
	require.Eventually(t, func() bool {
		clients, codes, _ := b.counts()
		return clients == 0 && codes == 0
	}, 10*time.Second, 20*time.Millisecond)
}
