package youtube

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Scopes are the Google OAuth scopes Herald asks for: upload videos, and read the channel and its
// videos (channels.list, search.list forMine, videos.list).
const Scopes = "https://www.googleapis.com/auth/youtube.upload https://www.googleapis.com/auth/youtube.readonly"

// UsesPKCE reports that Google takes a PKCE challenge.
func (a *Adapter) UsesPKCE() bool { return true }

// AuthorizeURL is Google's consent page asking for offline access (a refresh token) to the
// YouTube scopes.
func (a *Adapter) AuthorizeURL(state, redirectURI, codeChallenge string) string {
	q := url.Values{}
	q.Set("client_id", a.cfg.ClientID)
	q.Set("redirect_uri", redirectURI)
	q.Set("response_type", "code")
	q.Set("scope", Scopes)
	q.Set("access_type", "offline")
	q.Set("prompt", "consent")
	q.Set("include_granted_scopes", "true")
	q.Set("state", state)
	if codeChallenge != "" {
		q.Set("code_challenge", codeChallenge)
		q.Set("code_challenge_method", "S256")
	}
	return a.auth + "/o/oauth2/v2/auth?" + q.Encode()
}

// tokenResponse is the answer of Google's token endpoint.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
	TokenType    string `json:"token_type"`
	Error        string `json:"error"`
}

// tokenCall posts a grant to the token endpoint.
func (a *Adapter) tokenCall(ctx context.Context, form url.Values) (*tokenResponse, error) {
	form.Set("client_id", a.cfg.ClientID)
	form.Set("client_secret", a.cfg.ClientSecret)
	r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodPost, URL: a.token + "/token", Body: []byte(form.Encode()), ContentType: "application/x-www-form-urlencoded"})
	if err != nil {
		return nil, err
	}
	var t tokenResponse
	jerr := json.Unmarshal(r.Body, &t)
	if r.Status != http.StatusOK || t.Error != "" {
		e := classify(r, false)
		if e.Kind == platforms.AuthExpired || (r.Status >= 400 && r.Status < 500 && e.Kind != platforms.RateLimited) {
			// A refused grant (invalid_grant, invalid_client...) will not work on a retry.
			e.Kind = platforms.Permanent
		}
		if e.Code == "invalid_grant" && form.Get("grant_type") == "refresh_token" {
			e.Message = "the refresh token is expired or revoked; reconnect the account (" + e.Message + ")"
		}
		return nil, e
	}
	if jerr != nil || t.AccessToken == "" {
		return nil, invalidBody(r.Status, "no access_token in the token answer", false)
	}
	return &t, nil
}

// Exchange trades an authorization code for tokens and reads the account's channel.
func (a *Adapter) Exchange(ctx context.Context, code, redirectURI, codeVerifier string) (platforms.Credentials, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}}
	if codeVerifier != "" {
		form.Set("code_verifier", codeVerifier)
	}
	t, err := a.tokenCall(ctx, form)
	if err != nil {
		return platforms.Credentials{}, err
	}
	c := platforms.Credentials{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken}
	if t.ExpiresIn > 0 {
		c.ExpiresAt = time.Now().Add(time.Duration(t.ExpiresIn) * time.Second).UTC()
	}
	id, handle, err := a.channel(ctx, c.AccessToken)
	if err != nil {
		return platforms.Credentials{}, err
	}
	c.UserID, c.Handle = id, handle
	return c, nil
}

// channel reads the authenticated user's channel: its id and its handle (custom URL, else title).
func (a *Adapter) channel(ctx context.Context, token string) (id, handle string, err error) {
	r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodGet, Bearer: token, URL: a.api + "/youtube/v3/channels?part=id,snippet&mine=true"})
	if err != nil {
		return "", "", err
	}
	if r.Status != http.StatusOK {
		return "", "", classify(r, false)
	}
	var list struct {
		Items []struct {
			ID      string `json:"id"`
			Snippet struct {
				Title     string `json:"title"`
				CustomURL string `json:"customUrl"`
			} `json:"snippet"`
		} `json:"items"`
	}
	if err := json.Unmarshal(r.Body, &list); err != nil {
		return "", "", invalidBody(r.Status, "not a channel list", false)
	}
	if len(list.Items) == 0 || list.Items[0].ID == "" {
		return "", "", &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Permanent, Status: r.Status, Message: "this Google account has no YouTube channel; create one and connect again"}
	}
	ch := list.Items[0]
	return ch.ID, or(ch.Snippet.CustomURL, ch.Snippet.Title), nil
}

// Refresh uses the refresh token for a new access token. Google does not rotate refresh tokens:
// the old one is kept unless a new one comes back. A refused refresh token is Permanent (the
// account must reconnect).
func (a *Adapter) Refresh(ctx context.Context, c platforms.Credentials) (platforms.Credentials, error) {
	if c.RefreshToken == "" {
		return c, &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Permanent, Message: "no refresh token; reconnect the account"}
	}
	t, err := a.tokenCall(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {c.RefreshToken}})
	if err != nil {
		return c, err
	}
	out := c
	out.AccessToken = t.AccessToken
	if t.RefreshToken != "" {
		out.RefreshToken = t.RefreshToken
	}
	out.ExpiresAt = time.Time{}
	if t.ExpiresIn > 0 {
		out.ExpiresAt = time.Now().Add(time.Duration(t.ExpiresIn) * time.Second).UTC()
	}
	return out, nil
}

// Revoke revokes the grant at Google (through the refresh token when there is one, which revokes
// its access tokens too). A token Google no longer knows counts as revoked.
func (a *Adapter) Revoke(ctx context.Context, c platforms.Credentials) error {
	tok := c.RefreshToken
	if tok == "" {
		tok = c.AccessToken
	}
	if tok == "" {
		return nil
	}
	r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodPost, URL: a.token + "/revoke", Body: []byte(url.Values{"token": {tok}}.Encode()), ContentType: "application/x-www-form-urlencoded"})
	if err != nil {
		return err
	}
	if r.Status == http.StatusOK {
		return nil
	}
	if reason, _ := parseError(r.Body); r.Status == http.StatusBadRequest && strings.Contains(reason, "invalid_token") {
		return nil
	}
	return classify(r, false)
}
