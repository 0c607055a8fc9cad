package tiktok

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Scopes are the Login Kit scopes Herald asks for: the profile (open_id, username), Direct Post,
// and reading the creator's videos for Lookup.
const Scopes = "user.info.basic,user.info.profile,video.publish,video.list"

// UsesPKCE reports that TikTok takes a PKCE challenge.
func (a *Adapter) UsesPKCE() bool { return true }

// AuthorizeURL is TikTok's consent page (www.tiktok.com/v2/auth/authorize/).
func (a *Adapter) AuthorizeURL(state, redirectURI, codeChallenge string) string {
	q := url.Values{}
	q.Set("client_key", a.cfg.ClientID)
	q.Set("scope", Scopes)
	q.Set("response_type", "code")
	q.Set("redirect_uri", redirectURI)
	q.Set("state", state)
	if codeChallenge != "" {
		q.Set("code_challenge", codeChallenge)
		q.Set("code_challenge_method", "S256")
	}
	return a.auth + "/v2/auth/authorize/?" + q.Encode()
}

// tokenResponse is the answer of POST /v2/oauth/token/ (not enveloped).
type tokenResponse struct {
	AccessToken      string `json:"access_token"`
	ExpiresIn        int64  `json:"expires_in"`
	OpenID           string `json:"open_id"`
	RefreshToken     string `json:"refresh_token"`
	RefreshExpiresIn int64  `json:"refresh_expires_in"`
	Scope            string `json:"scope"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// tokenCall posts a grant with the client's key and secret. A refused grant is Permanent: the
// account must reconnect.
func (a *Adapter) tokenCall(ctx context.Context, form url.Values) (*tokenResponse, error) {
	form.Set("client_key", a.cfg.ClientID)
	form.Set("client_secret", a.cfg.ClientSecret)
	r, err := platforms.Send(ctx, a.hc, platforms.TikTok, platforms.Call{Method: http.MethodPost, URL: a.api + "/v2/oauth/token/", Body: []byte(form.Encode()), ContentType: "application/x-www-form-urlencoded"})
	if err != nil {
		return nil, err
	}
	var t tokenResponse
	jerr := json.Unmarshal(r.Body, &t)
	switch {
	case r.Status >= 500 || r.Status == http.StatusTooManyRequests:
		return nil, classify(r.Status, t.Error, t.ErrorDescription, false)
	case t.Error != "" || r.Status != http.StatusOK:
		msg := t.ErrorDescription
		if msg == "" {
			msg = http.StatusText(r.Status)
		}
		if form.Get("grant_type") == "refresh_token" {
			msg = "the refresh token was refused; reconnect the account (" + msg + ")"
		}
		return nil, &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Permanent, Status: r.Status, Code: t.Error, Message: msg}
	case jerr != nil || t.AccessToken == "":
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
		if t.RefreshExpiresIn > 0 {
			c.RefreshExpiresAt = now.Add(time.Duration(t.RefreshExpiresIn) * time.Second).UTC()
		}
	}
	if t.OpenID != "" {
		c.UserID = t.OpenID
	}
	return c
}

// Exchange trades an authorization code (with its PKCE verifier) for tokens; UserID is the
// open_id and Handle the username from /v2/user/info/.
func (a *Adapter) Exchange(ctx context.Context, code, redirectURI, codeVerifier string) (platforms.Credentials, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}}
	if codeVerifier != "" {
		form.Set("code_verifier", codeVerifier)
	}
	t, err := a.tokenCall(ctx, form)
	if err != nil {
		return platforms.Credentials{}, err
	}
	c := t.apply(platforms.Credentials{})
	var info struct {
		User struct {
			OpenID      string `json:"open_id"`
			Username    string `json:"username"`
			DisplayName string `json:"display_name"`
		} `json:"user"`
	}
	if err := a.call(ctx, platforms.Call{Method: http.MethodGet, URL: a.api + "/v2/user/info/?fields=open_id,username,display_name", Bearer: c.AccessToken}, &info); err != nil {
		return platforms.Credentials{}, err
	}
	if c.UserID == "" {
		c.UserID = info.User.OpenID
	}
	c.Handle = or(info.User.Username, info.User.DisplayName)
	if c.UserID == "" {
		return platforms.Credentials{}, invalidBody(http.StatusOK, "no open_id", false)
	}
	return c, nil
}

// Refresh uses the refresh token; TikTok may answer with a new refresh token, which replaces the
// old one.
func (a *Adapter) Refresh(ctx context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	if c.RefreshToken == "" {
		return c, &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Permanent, Message: "no refresh token; reconnect the account"}
	}
	t, err := a.tokenCall(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {c.RefreshToken}})
	if err != nil {
		return c, err
	}
	return t.apply(c), nil
}

// Revoke revokes the access token (and with it the user's authorization of the app).
func (a *Adapter) Revoke(ctx context.Context, c platforms.Credentials) error {
	if c.AccessToken == "" {
		return nil
	}
	form := url.Values{"client_key": {a.cfg.ClientID}, "client_secret": {a.cfg.ClientSecret}, "token": {c.AccessToken}}
	r, err := platforms.Send(ctx, a.hc, platforms.TikTok, platforms.Call{Method: http.MethodPost, URL: a.api + "/v2/oauth/revoke/", Body: []byte(form.Encode()), ContentType: "application/x-www-form-urlencoded"})
	if err != nil {
		return err
	}
	var t tokenResponse
	_ = json.Unmarshal(r.Body, &t)
	if r.Status == http.StatusOK && t.Error == "" {
		return nil
	}
	return classify(r.Status, t.Error, t.ErrorDescription, false)
}
