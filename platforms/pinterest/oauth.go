package pinterest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Scopes are the OAuth scopes Herald asks for: read the account, list boards, create Pins and
// upload videos.
const Scopes = "boards:read,boards:write,pins:read,pins:write,user_accounts:read"

// UsesPKCE reports that Pinterest's confidential code flow takes no PKCE challenge.
func (a *Adapter) UsesPKCE() bool { return false }

// AuthorizeURL is Pinterest's consent page (www.pinterest.com/oauth/). The PKCE challenge is
// ignored.
func (a *Adapter) AuthorizeURL(state, redirectURI, _ string) string {
	q := url.Values{}
	q.Set("client_id", a.cfg.ClientID)
	q.Set("redirect_uri", redirectURI)
	q.Set("response_type", "code")
	q.Set("scope", Scopes)
	q.Set("state", state)
	return a.auth + "/oauth/?" + q.Encode()
}

// tokenResponse is the answer of POST /v5/oauth/token.
type tokenResponse struct {
	AccessToken           string `json:"access_token"`
	RefreshToken          string `json:"refresh_token"`
	ExpiresIn             int64  `json:"expires_in"`
	RefreshTokenExpiresIn int64  `json:"refresh_token_expires_in"`
	RefreshTokenExpiresAt int64  `json:"refresh_token_expires_at"`
	Scope                 string `json:"scope"`
}

// tokenCall posts a grant with the client's Basic credentials. A refused grant is Permanent: the
// account must reconnect.
func (a *Adapter) tokenCall(ctx context.Context, form url.Values) (*tokenResponse, error) {
	r, err := platforms.Send(ctx, a.hc, platforms.Pinterest, platforms.Call{Method: http.MethodPost, URL: a.api + "/v5/oauth/token", Body: []byte(form.Encode()), ContentType: "application/x-www-form-urlencoded", BasicUser: a.cfg.ClientID, BasicPass: a.cfg.ClientSecret})
	if err != nil {
		return nil, err
	}
	if r.Status != http.StatusOK {
		e := classify(r, false)
		if e.Kind == platforms.AuthExpired || e.Kind == platforms.Permanent {
			e.Kind = platforms.Permanent
			if form.Get("grant_type") == "refresh_token" {
				e.Message = "the refresh token was refused; reconnect the account (" + e.Message + ")"
			}
		}
		return nil, e
	}
	var t tokenResponse
	if json.Unmarshal(r.Body, &t) != nil || t.AccessToken == "" {
		if _, msg, ok := parseError(r.Body); ok {
			return nil, &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Permanent, Status: r.Status, Message: "the token endpoint refused: " + msg}
		}
		return nil, invalidBody(r.Status, "no access_token in the token answer", false)
	}
	return &t, nil
}

// apply writes a token answer into credentials, keeping the old refresh token when none came.
func (t *tokenResponse) apply(c platforms.Credentials) platforms.Credentials {
	now := time.Now()
	c.AccessToken = t.AccessToken
	c.ExpiresAt = time.Time{}
	if t.ExpiresIn > 0 {
		c.ExpiresAt = now.Add(time.Duration(t.ExpiresIn) * time.Second).UTC()
	}
	if t.RefreshToken != "" {
		c.RefreshToken = t.RefreshToken
		switch {
		case t.RefreshTokenExpiresAt > 0:
			c.RefreshExpiresAt = time.Unix(t.RefreshTokenExpiresAt, 0).UTC()
		case t.RefreshTokenExpiresIn > 0:
			c.RefreshExpiresAt = now.Add(time.Duration(t.RefreshTokenExpiresIn) * time.Second).UTC()
		}
	}
	return c
}

// Exchange trades an authorization code for tokens, reads the account (UserID and Handle are its
// username) and stores its first board in Extra["board_id"] (and its name in Extra["board_name"])
// as the board Herald pins to. An account without boards connects without one; Publish then looks
// again.
func (a *Adapter) Exchange(ctx context.Context, code, redirectURI, _ string) (platforms.Credentials, error) {
	t, err := a.tokenCall(ctx, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}})
	if err != nil {
		return platforms.Credentials{}, err
	}
	c := t.apply(platforms.Credentials{})
	r, err := platforms.Send(ctx, a.hc, platforms.Pinterest, platforms.Call{Method: http.MethodGet, URL: a.api + "/v5/user_account", Bearer: c.AccessToken})
	if err != nil {
		return platforms.Credentials{}, err
	}
	if r.Status != http.StatusOK {
		return platforms.Credentials{}, classify(r, false)
	}
	var acct struct {
		Username string `json:"username"`
	}
	if json.Unmarshal(r.Body, &acct) != nil || acct.Username == "" {
		return platforms.Credentials{}, invalidBody(r.Status, "no username in user_account", false)
	}
	c.UserID, c.Handle = acct.Username, acct.Username
	b, err := a.firstBoard(ctx, c.AccessToken)
	if err != nil {
		return platforms.Credentials{}, err
	}
	if b.ID != "" {
		c.Extra = map[string]string{"board_id": b.ID, "board_name": b.Name}
	}
	return c, nil
}

// Refresh uses the refresh token; Pinterest answers with a new refresh token (60 days), which
// replaces the old one.
func (a *Adapter) Refresh(ctx context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	if strings.TrimSpace(c.RefreshToken) == "" {
		return c, &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Permanent, Message: "no refresh token; reconnect the account"}
	}
	t, err := a.tokenCall(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {c.RefreshToken}})
	if err != nil {
		return c, err
	}
	return t.apply(c), nil
}

// Revoke does nothing: Pinterest offers no token revocation endpoint (users remove the app under
// their settings' security section), so the tokens simply expire.
func (a *Adapter) Revoke(context.Context, platforms.Credentials) error { return nil }
