package x

import (
	"context"
	"net/url"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Scopes are the OAuth 2.0 scopes the consent through Herald's X app asks for: read and write
// posts, read the user (GET /2/users/me names the account), upload media, and offline.access,
// without which X issues no refresh token and the account stops working when its two-hour access
// token expires.
const Scopes = "tweet.read tweet.write users.read offline.access media.write"

// The adapter is a platforms.Connector: with Herald's own X app (Config.ClientID, and
// Config.ClientSecret for a confidential client) X connects through its consent in the browser
// like the other networks. Whether that app is configured is the server's to say
// (accountlink.Config.Configured).
var _ platforms.Connector = (*Adapter)(nil)

// UsesPKCE reports that X takes a PKCE challenge: it requires one.
func (a *Adapter) UsesPKCE() bool { return true }

// AuthorizeURL is X's consent page (x.com/i/oauth2/authorize) for Herald's X app, with the S256
// challenge of the flow's verifier.
func (a *Adapter) AuthorizeURL(state, redirectURI, codeChallenge string) string {
	q := url.Values{}
	q.Set("response_type", "code")
	q.Set("client_id", a.clientID)
	q.Set("redirect_uri", redirectURI)
	q.Set("scope", Scopes)
	q.Set("state", state)
	if codeChallenge != "" {
		q.Set("code_challenge", codeChallenge)
		q.Set("code_challenge_method", "S256")
	}
	return a.auth + "/i/oauth2/authorize?" + q.Encode()
}

// Exchange trades an authorization code and its PKCE verifier for tokens at /2/oauth2/token
// (Basic auth for a confidential app, client_id in the form for a public one), then names the
// account with GET /2/users/me. The credentials carry the app's client id in
// Extra["client_id"], so that refreshes and revocation use the client the tokens were issued
// to; its secret is never stored with them (client). A refused code is Permanent.
func (a *Adapter) Exchange(ctx context.Context, code, redirectURI, codeVerifier string) (platforms.Credentials, error) {
	c := platforms.Credentials{Extra: map[string]string{"client_id": a.clientID}}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}}
	if codeVerifier != "" {
		form.Set("code_verifier", codeVerifier)
	}
	r, err := platforms.Send(ctx, a.hc, platforms.X, a.oauthRequest(c, "/2/oauth2/token", form))
	if err != nil {
		return c, err
	}
	if r.Status < 200 || r.Status > 299 {
		e := classify(r, false)
		if e.Kind == platforms.AuthExpired || (r.Status >= 400 && r.Status < 500 && e.Kind != platforms.RateLimited) {
			// A refused code (invalid, expired, used, another redirect URI or verifier) or client
			// will be refused again.
			e.Kind = platforms.Permanent
		}
		return c, e
	}
	tok, err := tokenAnswer(r)
	if err != nil {
		return c, err
	}
	c.AccessToken, c.RefreshToken = tok.AccessToken, tok.RefreshToken
	if tok.ExpiresIn > 0 {
		c.ExpiresAt = time.Now().Add(time.Duration(tok.ExpiresIn) * time.Second).UTC()
	}
	return a.Identify(ctx, c)
}
