package oauth

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
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
	// reissued marks the pair of a rotation answered again within the refresh grace.
	reissued bool
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
	id, oe := requestClientID(req, f)
	f.Set("client_id", id)
	switch {
	case gt != "authorization_code" && gt != "refresh_token":
		gt = "other"
		oe = fail(http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	case oe != nil:
	case gt == "authorization_code":
		resp, oe = s.exchangeCode(c, f)
	default:
		resp, oe = s.refresh(c, f)
	}
	if oe != nil {
		s.tokens.WithLabelValues(gt, oe.Code).Inc()
		if oe.Status >= 500 {
			return c.JSON(oe.Status, oe)
		}
		s.cfg.Log.Info("oauth: token refused", append(server.LogAttrs(c), "grant_type", gt, "error", oe.Code, "reason", oe.Description)...)
		return writeError(c, oe)
	}
	outcome := "issued"
	if resp.reissued {
		outcome = "reissued"
	}
	s.tokens.WithLabelValues(gt, outcome).Inc()
	return c.JSON(http.StatusOK, resp)
}

// requestClientID is the client_id of a token or revocation request: the form's, or the user
// name of HTTP Basic credentials (RFC 6749 2.3.1: form-encoded, then base64), which some clients
// send even for a public client. Herald's clients are public: a password or client_secret sent
// along was never issued, and is not read.
func requestClientID(req *http.Request, f url.Values) (string, *oauthError) {
	id := f.Get("client_id")
	user, _, ok := req.BasicAuth()
	if !ok {
		return id, nil
	}
	bid, err := url.QueryUnescape(user)
	if err != nil {
		return "", fail(http.StatusUnauthorized, "invalid_client", "the Basic credentials' user name is not form-encoded")
	}
	if id != "" && id != bid {
		return "", fail(http.StatusBadRequest, "invalid_request", "client_id differs from the Basic credentials' user name")
	}
	return bid, nil
}

// successor is what a rotated refresh token keeps, sealed, of the pair its rotation issued.
type successor struct {
	Access    string    `json:"a"`
	Refresh   string    `json:"r"`
	ExpiresAt time.Time `json:"e"`
	Scope     string    `json:"s"`
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
// tokens rotate: each is exchanged once, and the answer carries its successor. Presented again
// within RefreshGrace of its rotation (parallel requests of one client, a retry whose answer was
// lost), it gets the same successor pair, kept sealed on the rotated token for that long.
// Presented after the grace, it is a reuse (a stolen copy, or the real client's): the grant is
// revoked, so the newest refresh token and every access token of it stop working.
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
		switch res := f.Get("resource"); {
		case f.Get("client_id") != g.ClientID:
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "the refresh token was issued to another client")
			return nil
		case res != "" && res != g.Resource:
			r.oe = fail(http.StatusBadRequest, "invalid_target", "resource differs from the grant's ("+g.Resource+")")
			return nil
		case tok.RotatedAt != nil:
			if resp := s.graceAnswer(tok, now); resp != nil {
				r.resp = resp
				return nil
			}
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "the refresh token was already used; the grant is revoked: authorize again")
			r.revoked = true
			return revokeGrant(tx, tok.KeyID, now)
		case !now.Before(tok.ExpiresAt):
			r.oe = fail(http.StatusBadRequest, "invalid_grant", "the refresh token has expired: authorize again")
			return nil
		}
		if r.resp, err = s.issue(tx, g, now); err != nil {
			return err
		}
		t := now
		tok.RotatedAt = &t
		if s.cfg.Sealer != nil {
			b, err := json.Marshal(successor{Access: r.resp.AccessToken, Refresh: r.resp.RefreshToken, ExpiresAt: now.Add(AccessTTL), Scope: r.resp.Scope})
			if err != nil {
				return err
			}
			tok.Successor = s.cfg.Sealer.Seal(b)
		}
		return tx.PutOAuthToken(h, tok)
	})
	if oe != nil {
		return nil, oe
	}
	if r.resp != nil && r.resp.reissued {
		s.cfg.Log.Info("oauth: rotated refresh token presented again within the grace; same pair answered", server.LogAttrs(c)...)
	}
	if r.revoked {
		s.cfg.Log.Warn("oauth: refresh token reused; grant revoked", server.LogAttrs(c)...)
	}
	return r.resp, r.oe
}

// graceAnswer is the pair a rotated refresh token's rotation issued, when it is presented within
// RefreshGrace of it; nil after the grace, or when the pair cannot be opened.
func (s *Service) graceAnswer(tok *persistence.OAuthToken, now time.Time) *tokenResponse {
	if s.cfg.Sealer == nil || tok.Successor == nil || !now.Before(tok.RotatedAt.Add(RefreshGrace)) {
		return nil
	}
	b, err := s.cfg.Sealer.Open(tok.Successor)
	if err != nil {
		return nil
	}
	var p successor
	if json.Unmarshal(b, &p) != nil || !now.Before(p.ExpiresAt) {
		return nil
	}
	return &tokenResponse{AccessToken: p.Access, TokenType: "Bearer", ExpiresIn: int(p.ExpiresAt.Sub(now) / time.Second),
		RefreshToken: p.Refresh, Scope: p.Scope, reissued: true}
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
	raw := req.PostForm.Get("token")
	clientID, oe := requestClientID(req, req.PostForm)
	if oe != nil {
		return writeError(c, oe)
	}
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

// register is POST /oauth/register. Every client Herald registers is public: a request for
// client_secret_post or client_secret_basic is registered as none, and the answer says so (RFC
// 7591 3.2.1: the server may replace requested metadata; the answer holds what was registered),
// with no secret. A secret handed to anyone who registers would authenticate nothing that PKCE
// does not already bind, and an identical registration could not be given it again.
//
// An identical registration (same client_name and redirect_uris) is answered with the client it
// made before, which it keeps alive for another UnusedClientTTL; only a registration that makes
// a new client counts against RegistrationsPerHour of its client address.
func (s *Service) register(c *echo.Context) error {
	reg, oe := s.readRegistration(c)
	if oe != nil {
		s.registered.WithLabelValues(oe.Code).Inc()
		return writeError(c, oe)
	}
	now := s.cfg.Now().UTC()
	ctx := c.Request().Context()
	var cl *persistence.OAuthClient
	err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		cl, err = tx.FindOAuthClient(reg.ClientName, reg.RedirectURIs)
		if errors.Is(err, persistence.ErrNotFound) {
			cl, err = nil, nil
		}
		return err
	})
	if err != nil {
		s.registered.WithLabelValues("server_error").Inc()
		return s.storeFailed(c, "registration failed", err)
	}
	if cl == nil {
		d := s.registrations.Take(registrationAddress(c), s.cfg.RegistrationsPerHour)
		if !d.Allowed {
			s.registered.WithLabelValues("rate_limited").Inc()
			c.Response().Header().Set("Retry-After", strconv.Itoa(int((d.Reset+time.Second-1)/time.Second)))
			return writeError(c, fail(http.StatusTooManyRequests, "too_many_requests", "too many new clients registered from this address; try again later"))
		}
	}
	reused := false
	err = s.cfg.Store.Update(ctx, func(tx *persistence.Tx) error {
		found, err := tx.FindOAuthClient(reg.ClientName, reg.RedirectURIs)
		switch {
		case err == nil:
			cl, reused = found, true
			// Counted from the last registration, so that the client is not swept between a
			// registration and the user's approval.
			if now.Sub(found.LastRegistered()) < time.Hour {
				return nil
			}
			found.RegisteredAt = now
			return tx.PutOAuthClient(found)
		case !errors.Is(err, persistence.ErrNotFound):
			return err
		}
		id, _ := auth.GenerateToken("hcl_")
		cl, reused = &persistence.OAuthClient{ID: id, Name: reg.ClientName, RedirectURIs: reg.RedirectURIs, CreatedAt: now}, false
		return tx.PutOAuthClient(cl)
	})
	if err != nil {
		s.registered.WithLabelValues("server_error").Inc()
		return s.storeFailed(c, "registration failed", err)
	}
	// 201 either way: clients expect it of a registration (RFC 7591 3.2.1).
	if reused {
		s.registered.WithLabelValues("reused").Inc()
		s.cfg.Log.Info("oauth: client registered again", append(server.LogAttrs(c), "client_id", cl.ID)...)
	} else {
		s.registered.WithLabelValues("registered").Inc()
		s.cfg.Log.Info("oauth: client registered", append(server.LogAttrs(c), "client_id", cl.ID)...)
	}
	reg.ClientID, reg.ClientIDIssuedAt = cl.ID, cl.CreatedAt.Unix()
	return c.JSON(http.StatusCreated, reg)
}

// registrationAddress is the key registrations are counted by: the client address as the
// server resolves it (server.ClientAddress), an IPv6 address by its /64.
func registrationAddress(c *echo.Context) string {
	a := server.ClientAddress(c)
	ip, err := netip.ParseAddr(a)
	if err != nil {
		return a
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// readRegistration reads and checks a registration request.
func (s *Service) readRegistration(c *echo.Context) (*registration, *oauthError) {
	var reg registration
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, 64<<10))
	if err != nil || json.Unmarshal(body, &reg) != nil {
		return nil, fail(http.StatusBadRequest, "invalid_client_metadata", "send the client's metadata as a JSON object")
	}
	switch reg.TokenEndpointAuthMethod {
	case "", "none", "client_secret_post", "client_secret_basic":
		reg.TokenEndpointAuthMethod = "none"
	default:
		return nil, fail(http.StatusBadRequest, "invalid_client_metadata",
			"token_endpoint_auth_method: none, client_secret_post or client_secret_basic (each is registered as none: Herald's clients are public and use PKCE)")
	}
	if oe := checkMetadata(&reg); oe != nil {
		return nil, oe
	}
	if reg.ClientName == "" {
		reg.ClientName = "Unnamed application"
	}
	return &reg, nil
}

// checkMetadata checks and normalises the metadata a registration or a client ID metadata
// document gives: client_name (trimmed), grant and response types (set to what Herald
// registers), redirect URIs (redirect.go).
func checkMetadata(reg *registration) *oauthError {
	reg.ClientName = strings.TrimSpace(reg.ClientName)
	if utf8.RuneCountInString(reg.ClientName) > 100 || !utf8.ValidString(reg.ClientName) || strings.IndexFunc(reg.ClientName, unicode.IsControl) >= 0 {
		return fail(http.StatusBadRequest, "invalid_client_metadata", "client_name: at most 100 characters, no control characters")
	}
	for _, g := range reg.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return fail(http.StatusBadRequest, "invalid_client_metadata", "grant_types: authorization_code and refresh_token only")
		}
	}
	for _, r := range reg.ResponseTypes {
		if r != "code" {
			return fail(http.StatusBadRequest, "invalid_client_metadata", "response_types: code only")
		}
	}
	reg.GrantTypes, reg.ResponseTypes = []string{"authorization_code", "refresh_token"}, []string{"code"}
	if len(reg.RedirectURIs) == 0 || len(reg.RedirectURIs) > 10 {
		return fail(http.StatusBadRequest, "invalid_redirect_uri", "redirect_uris: 1 to 10 URIs")
	}
	for _, u := range reg.RedirectURIs {
		if msg := checkRedirectURI(u); msg != "" {
			return fail(http.StatusBadRequest, "invalid_redirect_uri", msg)
		}
	}
	return nil
}
