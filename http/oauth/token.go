package oauth

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// tokenResponse is the token endpoint's answer (RFC 6749 5.1).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// token is POST /oauth/token.
func (s *Service) token(c *echo.Context) error {
	req := c.Request()
	if err := req.ParseForm(); err != nil {
		s.tokens.WithLabelValues("other", "invalid_request").Inc()
		return writeError(c, fail(http.StatusBadRequest, "invalid_request", "send an application/x-www-form-urlencoded body"))
	}
	f := req.PostForm
	gt := f.Get("grant_type")
	var resp *tokenResponse
	var oe *oauthError
	switch gt {
	case "authorization_code":
		resp, oe = s.exchangeCode(c, f)
	case "refresh_token":
		resp, oe = s.refresh(c, f)
	default:
		gt = "other"
		oe = fail(http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
	if oe != nil {
		s.tokens.WithLabelValues(gt, oe.Code).Inc()
		if oe.Status >= 500 {
			return c.JSON(oe.Status, oe)
		}
		s.cfg.Log.Info("oauth: token refused", append(server.LogAttrs(c), "grant_type", gt, "error", oe.Code, "reason", oe.Description)...)
		return writeError(c, oe)
	}
	s.tokens.WithLabelValues(gt, "issued").Inc()
	return c.JSON(http.StatusOK, resp)
}

// issue stores a new access and refresh token of a grant in the caller's transaction.
func (s *Service) issue(tx *persistence.Tx, g *persistence.OAuthGrant, now time.Time) (*tokenResponse, error) {
	access, ah := auth.GenerateToken(auth.AccessTokenPrefix)
	refresh, rh := auth.GenerateToken(auth.RefreshTokenPrefix)
	if err := tx.PutOAuthToken(ah, &persistence.OAuthToken{Kind: persistence.TokenAccess, KeyID: g.KeyID, ExpiresAt: now.Add(AccessTTL)}); err != nil {
		return nil, err
	}
	if err := tx.PutOAuthToken(rh, &persistence.OAuthToken{Kind: persistence.TokenRefresh, KeyID: g.KeyID, ExpiresAt: now.Add(RefreshTTL)}); err != nil {
		return nil, err
	}
	return &tokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: int(AccessTTL / time.Second), RefreshToken: refresh,
		Scope: strings.Join(g.Scopes, " ")}, nil
}

// revokeGrant revokes the connector key behind a grant in the caller's transaction: every token
// of the grant is refused from then on.
func revokeGrant(tx *persistence.Tx, keyID string, now time.Time) error {
	k, err := tx.APIKey(keyID)
	if err != nil || k.RevokedAt != nil {
		return err
	}
	k.RevokedAt = &now
	return tx.PutAPIKey(k, nil)
}

// liveGrant returns the grant of a key id with its key, or an invalid_grant when the key is
// revoked or expired.
func liveGrant(tx *persistence.Tx, keyID string, now time.Time) (*persistence.OAuthGrant, *oauthError, error) {
	k, err := tx.APIKey(keyID)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, fail(http.StatusBadRequest, "invalid_grant", "the grant no longer exists"), nil
	}
	if err != nil {
		return nil, nil, err
	}
	if k.RevokedAt != nil || (k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)) {
		return nil, fail(http.StatusBadRequest, "invalid_grant", "the grant was revoked (its connector key is revoked)"), nil
	}
	g, err := tx.OAuthGrant(keyID)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, fail(http.StatusBadRequest, "invalid_grant", "the grant no longer exists"), nil
	}
	return g, nil, err
}

// exchangeCode is the authorization_code grant: code, code_verifier, redirect_uri, client_id,
// resource. The code is good once and for CodeTTL; a second use revokes what the first one got
// (RFC 6749 4.1.2).
func (s *Service) exchangeCode(c *echo.Context, f url.Values) (*tokenResponse, *oauthError) {
	code := f.Get("code")
	if !auth.WellFormedToken(code, auth.CodePrefix) {
		return nil, fail(http.StatusBadRequest, "invalid_grant", "unknown authorization code")
	}
	now := s.cfg.Now().UTC()
	r, oe := s.runToken(c, "code exchange", func(tx *persistence.Tx, r *tokenTx) error {
		h := auth.Hash(code)
		rec, err := tx.OAuthCode(h)
		if errors.Is(err, persistence.ErrNotFound) {
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "unknown authorization code")
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case rec.UsedAt != nil:
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "the authorization code was already used; the tokens it gave are revoked")
			r.revoked = true
			return revokeGrant(tx, rec.KeyID, now)
		case !now.Before(rec.ExpiresAt):
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "the authorization code has expired (codes last 60 seconds)")
			return nil
		case f.Get("client_id") != rec.ClientID:
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "the authorization code was issued to another client")
			return nil
		case f.Get("redirect_uri") != rec.RedirectURI:
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "redirect_uri does not match the authorization request's")
			return nil
		case !pkceOK(f.Get("code_verifier"), rec.CodeChallenge):
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge (PKCE S256)")
			return nil
		}
		g, gerr, err := liveGrant(tx, rec.KeyID, now)
		if err != nil || gerr != nil {
			r.oe = gerr
			return err
		}
		if res := f.Get("resource"); res != "" && res != g.Resource {
			r.oe = fail(http.StatusBadRequest, "invalid_target", "resource differs from the authorization request's ("+g.Resource+")")
			return nil
		}
		t := now
		rec.UsedAt = &t
		if err := tx.PutOAuthCode(h, rec); err != nil {
			return err
		}
		r.resp, err = s.issue(tx, g, now)
		return err
	})
	if oe != nil {
		return nil, oe
	}
	return r.resp, r.oe
}

// refresh is the refresh_token grant: refresh_token, client_id, resource (optional). Refresh
// tokens rotate: each is good once, and the answer carries its successor. Presenting one that
// was already exchanged is a reuse (a stolen copy, or the real client's): the grant is revoked,
// so the newest refresh token and every access token of it stop working.
func (s *Service) refresh(c *echo.Context, f url.Values) (*tokenResponse, *oauthError) {
	raw := f.Get("refresh_token")
	if !auth.WellFormedToken(raw, auth.RefreshTokenPrefix) {
		return nil, fail(http.StatusBadRequest, "invalid_grant", "unknown refresh token")
	}
	now := s.cfg.Now().UTC()
	r, oe := s.runToken(c, "refresh", func(tx *persistence.Tx, r *tokenTx) error {
		h := auth.Hash(raw)
		tok, err := tx.OAuthToken(h)
		if errors.Is(err, persistence.ErrNotFound) || (err == nil && tok.Kind != persistence.TokenRefresh) {
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "unknown refresh token")
			return nil
		}
		if err != nil {
			return err
		}
		g, gerr, err := liveGrant(tx, tok.KeyID, now)
		if err != nil || gerr != nil {
			r.oe = gerr
			return err
		}
		switch {
		case f.Get("client_id") != g.ClientID:
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "the refresh token was issued to another client")
			return nil
		case tok.RotatedAt != nil:
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "the refresh token was already used; the grant is revoked: authorize again")
			r.revoked = true
			return revokeGrant(tx, tok.KeyID, now)
		case !now.Before(tok.ExpiresAt):
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "the refresh token has expired: authorize again")
			return nil
		}
		if res := f.Get("resource"); res != "" && res != g.Resource {
			r.oe = fail(http.StatusBadRequest, "invalid_target", "resource differs from the grant's ("+g.Resource+")")
			return nil
		}
		t := now
		tok.RotatedAt = &t
		if err := tx.PutOAuthToken(h, tok); err != nil {
			return err
		}
		r.resp, err = s.issue(tx, g, now)
		return err
	})
	if oe != nil {
		return nil, oe
	}
	if r.revoked {
		s.cfg.Log.Warn("oauth: refresh token reused; grant revoked", server.LogAttrs(c)...)
	}
	return r.resp, r.oe
}

// tokenTx is what one token request's transaction answers, and whether it revoked a grant.
type tokenTx struct {
	resp    *tokenResponse
	oe      *oauthError
	revoked bool
}

// runToken runs a token request's transaction. fn may run more than once (the store's contract):
// it starts from an empty tokenTx each time. A store failure is a server_error (logged as what
// failed); a revoked grant clears the authenticator's cache, so that its tokens fail at once.
func (s *Service) runToken(c *echo.Context, what string, fn func(*persistence.Tx, *tokenTx) error) (*tokenTx, *oauthError) {
	var r *tokenTx
	err := s.cfg.Store.Update(c.Request().Context(), func(tx *persistence.Tx) error {
		r = &tokenTx{}
		return fn(tx, r)
	})
	if err != nil {
		s.cfg.Log.Error("oauth: "+what+" failed", append(server.LogAttrs(c), "error", err)...)
		return nil, fail(http.StatusInternalServerError, "server_error", "Herald could not complete the request; try again")
	}
	if r.revoked {
		s.cfg.Auth.Invalidate()
	}
	return r, nil
}

// revoke is POST /oauth/revoke (RFC 7009): token, token_type_hint, client_id. An access token
// ends alone; a refresh token ends its whole grant (its connector key is revoked). The answer is
// 200 whether or not the token was known.
func (s *Service) revoke(c *echo.Context) error {
	req := c.Request()
	if err := req.ParseForm(); err != nil {
		return writeError(c, fail(http.StatusBadRequest, "invalid_request", "send an application/x-www-form-urlencoded body"))
	}
	raw, clientID := req.PostForm.Get("token"), req.PostForm.Get("client_id")
	if raw == "" {
		return writeError(c, fail(http.StatusBadRequest, "invalid_request", "token is required"))
	}
	if !auth.WellFormedToken(raw, auth.AccessTokenPrefix) && !auth.WellFormedToken(raw, auth.RefreshTokenPrefix) {
		return c.NoContent(http.StatusOK)
	}
	now := s.cfg.Now().UTC()
	err := s.cfg.Store.Update(req.Context(), func(tx *persistence.Tx) error {
		h := auth.Hash(raw)
		tok, err := tx.OAuthToken(h)
		if errors.Is(err, persistence.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		g, err := tx.OAuthGrant(tok.KeyID)
		if err != nil && !errors.Is(err, persistence.ErrNotFound) {
			return err
		}
		if g != nil && g.ClientID != clientID {
			return nil // another client's token: left alone (RFC 7009 2.1)
		}
		if tok.Kind == persistence.TokenRefresh {
			if err := revokeGrant(tx, tok.KeyID, now); err != nil {
				return err
			}
		}
		return tx.DeleteOAuthToken(h)
	})
	if err != nil {
		return s.storeFailed(c, "revocation failed", err)
	}
	s.cfg.Auth.Invalidate()
	return c.NoContent(http.StatusOK)
}

// registration is a client's registration request and answer (RFC 7591).
type registration struct {
	ClientID                string   `json:"client_id,omitempty"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at,omitempty"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
}

// register is POST /oauth/register: public clients only (no secret), redirect URIs on loopback
// http or https, rate-limited per client address.
func (s *Service) register(c *echo.Context) error {
	d := s.registrations.Take(server.ClientAddress(c), s.cfg.RegistrationsPerHour)
	if !d.Allowed {
		s.registered.WithLabelValues("rate_limited").Inc()
		c.Response().Header().Set("Retry-After", strconv.Itoa(int((d.Reset+time.Second-1)/time.Second)))
		return writeError(c, fail(http.StatusTooManyRequests, "too_many_requests", "too many registrations from this address; try again later"))
	}
	reg, oe := s.readRegistration(c)
	if oe != nil {
		s.registered.WithLabelValues(oe.Code).Inc()
		return writeError(c, oe)
	}
	id, _ := auth.GenerateToken("hcl_")
	now := s.cfg.Now().UTC()
	cl := &persistence.OAuthClient{ID: id, Name: reg.ClientName, RedirectURIs: reg.RedirectURIs, CreatedAt: now}
	if err := s.cfg.Store.Update(c.Request().Context(), func(tx *persistence.Tx) error { return tx.PutOAuthClient(cl) }); err != nil {
		s.registered.WithLabelValues("server_error").Inc()
		return s.storeFailed(c, "registration failed", err)
	}
	s.registered.WithLabelValues("registered").Inc()
	s.cfg.Log.Info("oauth: client registered", append(server.LogAttrs(c), "client_id", id)...)
	reg.ClientID, reg.ClientIDIssuedAt = id, now.Unix()
	return c.JSON(http.StatusCreated, reg)
}

func (s *Service) readRegistration(c *echo.Context) (*registration, *oauthError) {
	var reg registration
	body, err := io.ReadAll(c.Request().Body)
	if err != nil || json.Unmarshal(body, &reg) != nil {
		return nil, fail(http.StatusBadRequest, "invalid_client_metadata", "send the client's metadata as a JSON object")
	}
	reg.ClientName = strings.TrimSpace(reg.ClientName)
	if reg.ClientName == "" {
		reg.ClientName = "Unnamed application"
	}
	if utf8.RuneCountInString(reg.ClientName) > 100 || strings.IndexFunc(reg.ClientName, unicode.IsControl) >= 0 {
		return nil, fail(http.StatusBadRequest, "invalid_client_metadata", "client_name: 1 to 100 characters, no control characters")
	}
	switch reg.TokenEndpointAuthMethod {
	case "", "none":
		reg.TokenEndpointAuthMethod = "none"
	default:
		return nil, fail(http.StatusBadRequest, "invalid_client_metadata", "token_endpoint_auth_method must be none: Herald registers public clients, which use PKCE")
	}
	for _, g := range reg.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, fail(http.StatusBadRequest, "invalid_client_metadata", "grant_types: authorization_code and refresh_token only")
		}
	}
	for _, r := range reg.ResponseTypes {
		if r != "code" {
			return nil, fail(http.StatusBadRequest, "invalid_client_metadata", "response_types: code only")
		}
	}
	reg.GrantTypes, reg.ResponseTypes = []string{"authorization_code", "refresh_token"}, []string{"code"}
	if len(reg.RedirectURIs) == 0 || len(reg.RedirectURIs) > 10 {
		return nil, fail(http.StatusBadRequest, "invalid_redirect_uri", "redirect_uris: 1 to 10 URIs")
	}
	for _, u := range reg.RedirectURIs {
		if msg := checkRedirectURI(u); msg != "" {
			return nil, fail(http.StatusBadRequest, "invalid_redirect_uri", msg)
		}
	}
	return &reg, nil
}

// checkRedirectURI allows https URIs and http URIs on loopback (127.0.0.1, [::1], localhost; any
// port: RFC 8252 7.3), never a fragment; it returns why a URI is refused.
func checkRedirectURI(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || len(raw) > 2000 || !u.IsAbs() || u.Host == "" || u.User != nil {
		return "redirect_uris: " + strconv.Quote(raw) + " is not an absolute URL"
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return "redirect_uris: " + strconv.Quote(raw) + " has a fragment"
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		switch u.Hostname() {
		case "127.0.0.1", "::1", "localhost":
			return ""
		}
		return "redirect_uris: " + strconv.Quote(raw) + " is plain http to a host other than loopback (127.0.0.1, [::1], localhost); use https"
	}
	return "redirect_uris: " + strconv.Quote(raw) + " must be https, or http on loopback"
}
