package accountlink

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/secret"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
	"github.com/heraldhq/herald/platforms/x"
)

// sealedCreds opens the credentials the account actor sealed (the fixture's box has a zero key).
func sealedCreds(t *testing.T, acc *persistence.Account) platforms.Credentials {
	t.Helper()
	box, err := secret.NewBox(make([]byte, 32))
	require.NoError(t, err)
	plain, err := box.Open(acc.Secret)
	require.NoError(t, err)
	var c platforms.Credentials
	require.NoError(t, json.Unmarshal(plain, &c))
	return c
}

// xConsent begins X's consent for the fixture's user into workspace ws, checks the consent page
// Herald sends the browser to, and plays it as the network user handle.
func (f *fixture) xConsent(t *testing.T, ws, handle string) (state string, cb Callback) {
	t.Helper()
	u, err := f.svc.Begin(context.Background(), f.user, ws, platforms.X, time.Now())
	require.NoError(t, err)
	state = stateOf(t, u)
	p, target, err := f.svc.Authorize(state, f.user, time.Now())
	require.NoError(t, err)
	require.Equal(t, platforms.X, p)
	consentURL, err := url.Parse(target)
	require.NoError(t, err)
	require.Equal(t, f.sim.BaseURL()+sim.Prefix(platforms.X)+"/i/oauth2/authorize", consentURL.Scheme+"://"+consentURL.Host+consentURL.Path)
	q := consentURL.Query()
	require.Equal(t, sim.ClientID, q.Get("client_id"))
	require.Equal(t, x.Scopes, q.Get("scope"))
	require.Equal(t, "https://herald.example"+CallbackPath, q.Get("redirect_uri"))
	require.Equal(t, state, q.Get("state"))
	// PKCE S256: the challenge of the verifier kept in the state, never the verifier itself.
	id, _, err := f.svc.signer.verify(state)
	require.NoError(t, err)
	var st *persistence.ConnectState
	require.NoError(t, f.store.View(func(tx *persistence.Tx) (err error) {
		st, err = tx.ConnectState(id.String())
		return err
	}))
	require.Len(t, st.Verifier, 43)
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	require.Equal(t, challengeOf(st.Verifier), q.Get("code_challenge"))
	require.NotContains(t, target, st.Verifier)
	q.Set("login_hint", handle)
	consentURL.RawQuery = q.Encode()
	return state, consent(t, consentURL.String())
}

// With an X app configured, X connects through its consent: begin → X's consent page with a PKCE
// challenge → callback → an account of the X user, in the workspace the consent was begun for,
// whose credentials name the app's client id (never its secret) so that refreshes work. The
// same X user connected again renews that account; from another workspace it is refused
// (ErrElsewhere) and nothing changes.
func TestXConnectsThroughItsConsent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	ws := &persistence.Workspace{ID: uuid.Must(uuid.NewV7()).String(), UserID: f.user, Name: "Client", CreatedAt: time.Now().UTC()}
	require.NoError(t, f.store.Update(ctx, func(tx *persistence.Tx) error { return tx.PutWorkspace(ws) }))

	_, cb := f.xConsent(t, ws.ID, "xconsenter")
	p, res, err := f.svc.Complete(ctx, cb, f.user, time.Now())
	require.NoError(t, err)
	require.Equal(t, platforms.X, p)
	require.True(t, res.Created)
	acc := res.Account
	require.Equal(t, string(platforms.X), acc.Platform)
	require.Equal(t, ws.ID, acc.WorkspaceID, "the workspace the consent was begun for")
	require.Equal(t, "xconsenter", *acc.Username)
	want, err := f.sim.NewAccount(platforms.X, "xconsenter")
	require.NoError(t, err)
	require.Equal(t, want.UserID, acc.NetworkUserID)

	var stored *persistence.Account
	require.NoError(t, f.store.View(func(tx *persistence.Tx) (err error) {
		stored, err = tx.Account(acc.ID)
		return err
	}))
	creds := sealedCreds(t, stored)
	require.Equal(t, map[string]string{"client_id": sim.ClientID}, creds.Extra, "the app's client id, not its secret")
	require.NotEmpty(t, creds.RefreshToken)
	require.WithinDuration(t, time.Now().Add(2*time.Hour), creds.ExpiresAt, time.Minute)
	refreshed, err := f.svc.cfg.Adapters[platforms.X].Refresh(ctx, creds)
	require.NoError(t, err, "the stored client refreshes the token")
	require.NotEqual(t, creds.AccessToken, refreshed.AccessToken)

	// The callback is single use.
	_, _, err = f.svc.Complete(ctx, cb, f.user, time.Now())
	require.ErrorIs(t, err, ErrUsed)

	// Again from the same workspace: the same account, renewed.
	_, cb = f.xConsent(t, ws.ID, "xconsenter")
	_, res, err = f.svc.Complete(ctx, cb, f.user, time.Now())
	require.NoError(t, err)
	require.False(t, res.Created)
	require.Equal(t, acc.ID, res.Account.ID)

	// From main: refused, nothing created or moved.
	_, cb = f.xConsent(t, "", "xconsenter")
	_, _, err = f.svc.Complete(ctx, cb, f.user, time.Now())
	require.ErrorIs(t, err, ErrElsewhere)
	require.Empty(t, f.accounts(t), "nothing in main")
	require.NoError(t, f.store.View(func(tx *persistence.Tx) (err error) {
		stored, err = tx.Account(acc.ID)
		return err
	}))
	require.Equal(t, ws.ID, stored.WorkspaceID)
}

// The code is exchanged with the state's own verifier: a state whose verifier changed after the
// consent (a code presented with another verifier) is refused by X, and nothing is connected. A
// state token that was altered is refused before anything is read, and leaves the state usable.
func TestXConsentChecksPKCEAndState(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()

	state, cb := f.xConsent(t, "", "pkce-victim")
	bad := cb
	bad.State = state[:len(state)-2] + "AA"
	if bad.State == state {
		bad.State = state[:len(state)-2] + "BA"
	}
	_, _, err := f.svc.Complete(ctx, bad, f.user, time.Now())
	require.ErrorIs(t, err, ErrBadState)
	_, _, err = f.svc.Authorize(bad.State, f.user, time.Now())
	require.ErrorIs(t, err, ErrBadState)
	_, _, err = f.svc.Complete(ctx, Callback{State: "not-a-state", Code: cb.Code}, f.user, time.Now())
	require.ErrorIs(t, err, ErrBadState)
	require.Empty(t, f.accounts(t))

	id, _, err := f.svc.signer.verify(state)
	require.NoError(t, err)
	require.NoError(t, f.store.Update(ctx, func(tx *persistence.Tx) error {
		st, err := tx.ConnectState(id.String())
		if err != nil {
			return err
		}
		st.Verifier, _ = newVerifier()
		return tx.PutConnectState(st)
	}))
	_, _, err = f.svc.Complete(ctx, cb, f.user, time.Now())
	var xe *ExchangeError
	require.ErrorAs(t, err, &xe)
	require.True(t, xe.Refused(), "X refused the code: %v", err)
	require.Empty(t, f.accounts(t))
}

// Without an X app, X's consent does not run: Begin answers ErrNotConfigured, and links offer
// the other networks only. With one, links offer X after the API's seven.
func TestXConsentNeedsAnXApp(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	require.True(t, f.svc.Connects(platforms.X))
	require.Equal(t, platforms.X, f.svc.Offerable()[len(f.svc.Offerable())-1])
	svc, err := New(Config{Store: f.store, Adapters: f.svc.cfg.Adapters, Key: testKey(t, 0),
		Configured: func(p platforms.Platform) bool { return p != platforms.X }})
	require.NoError(t, err)
	_, err = svc.Begin(context.Background(), f.user, "", platforms.X, time.Now())
	require.ErrorIs(t, err, ErrNotConfigured)
	require.False(t, svc.Connects(platforms.X))
	require.Equal(t, Browser, svc.Offerable())
	require.False(t, IsBrowser(platforms.X), "the API's list stays the spec's")
	require.Empty(t, f.accounts(t))
}
