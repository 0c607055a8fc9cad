package x

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/platformstest"
	"github.com/heraldhq/herald/platforms/sim"
)

const redirect = "https://herald.example/v1/accounts/connect/callback"

// consentCode runs X's consent for the adapter's app with the challenge of verifier and returns
// the code the simulator sent back, after checking the consent page's query.
func consentCode(t *testing.T, a *Adapter, verifier, handle string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	u, err := url.Parse(a.AuthorizeURL("the-state", redirect, challenge))
	require.NoError(t, err)
	q := u.Query()
	require.True(t, strings.HasSuffix(u.Path, "/i/oauth2/authorize"), u.Path)
	require.Equal(t, "code", q.Get("response_type"))
	require.Equal(t, sim.ClientID, q.Get("client_id"))
	require.Equal(t, redirect, q.Get("redirect_uri"))
	require.Equal(t, Scopes, q.Get("scope"))
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	require.Equal(t, challenge, q.Get("code_challenge"))
	q.Set("login_hint", handle)
	u.RawQuery = q.Encode()
	back := platformstest.Consent(t, u.String(), redirect)
	require.Equal(t, "the-state", back.Query().Get("state"))
	require.NotEmpty(t, back.Query().Get("code"))
	return back.Query().Get("code")
}

// X's consent through Herald's app: the code and its PKCE verifier give a two-hour access token,
// a refresh token (offline.access) and the account's id and handle; the credentials name the
// app's client id but never its secret, and they refresh with the configured secret (Basic auth:
// a confidential client).
func TestConsentExchange(t *testing.T) {
	t.Parallel()
	srv, cfg := platformstest.Start(t, platforms.X, sim.Options{})
	a := New(cfg)
	require.True(t, a.UsesPKCE())
	ctx := context.Background()

	verifier, _ := platformstest.PKCE(t)
	code := consentCode(t, a, verifier, "consenter")
	c, err := a.Exchange(ctx, code, redirect, verifier)
	require.NoError(t, err)
	require.NotEmpty(t, c.AccessToken)
	require.NotEmpty(t, c.RefreshToken, "offline.access gives a refresh token")
	require.WithinDuration(t, time.Now().Add(2*time.Hour), c.ExpiresAt, time.Minute)
	require.Equal(t, "consenter", c.Handle)
	want, err := srv.NewAccount(platforms.X, "consenter")
	require.NoError(t, err)
	require.Equal(t, want.UserID, c.UserID)
	require.Equal(t, map[string]string{"client_id": sim.ClientID}, c.Extra, "the client id, never the secret")

	// The code is single use.
	_, err = a.Exchange(ctx, code, redirect, verifier)
	require.Equal(t, platforms.Permanent, kindOf(t, err))

	// The tokens publish, and refresh with the app's secret.
	_, err = a.Publish(ctx, c, platforms.Post{Text: "connected through the consent"})
	require.NoError(t, err)
	r, err := a.Refresh(ctx, c)
	require.NoError(t, err)
	require.NotEqual(t, c.RefreshToken, r.RefreshToken, "X rotates refresh tokens")
	require.Equal(t, sim.ClientID, r.Extra["client_id"])

	// The same app with a wrong secret is refused at the refresh: the secret is sent (Basic auth).
	wrong := cfg
	wrong.ClientSecret = "not-the-secret"
	_, err = New(wrong).Refresh(ctx, r)
	require.Equal(t, platforms.Permanent, kindOf(t, err))
}

// A code is refused without its verifier, with another one, with another redirect URI, and
// when the app's secret is wrong; each refusal is Permanent and nothing is issued.
func TestConsentExchangeRefused(t *testing.T) {
	t.Parallel()
	_, cfg := platformstest.Start(t, platforms.X, sim.Options{})
	a := New(cfg)
	ctx := context.Background()
	other, _ := platformstest.PKCE(t)
	wrong := cfg
	wrong.ClientSecret = "not-the-secret"
	for name, try := range map[string]func(code, verifier string) error{
		"no verifier":    func(code, _ string) error { _, err := a.Exchange(ctx, code, redirect, ""); return err },
		"other verifier": func(code, _ string) error { _, err := a.Exchange(ctx, code, redirect, other); return err },
		"other redirect": func(code, v string) error {
			_, err := a.Exchange(ctx, code, "https://evil.example/callback", v)
			return err
		},
		"wrong secret": func(code, v string) error { _, err := New(wrong).Exchange(ctx, code, redirect, v); return err },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			verifier, _ := platformstest.PKCE(t)
			err := try(consentCode(t, a, verifier, "refused"), verifier)
			require.Error(t, err)
			require.Equal(t, platforms.Permanent, kindOf(t, err))
		})
	}
}
