// Package oauth is Herald's OAuth 2.1 authorization server, for AI hosts that connect to Herald
// (the MCP connector) and for programs that call /v1 within scopes. It is Herald's own small
// code (docs/oauth.md says why): the authorization code grant with PKCE S256, refresh tokens
// that rotate (with a short grace for a client's parallel or retried refreshes), dynamic client
// registration (RFC 7591) and client ID metadata documents (draft-ietf-oauth-client-id-metadata-
// document, MCP 2025-11-25), revocation (RFC 7009), the metadata documents (RFC 8414, RFC 9728),
// the resource parameter (RFC 8707) bound into every token and the iss parameter on the
// authorization response (RFC 9207).
//
//	GET  /.well-known/oauth-protected-resource/mcp  the MCP endpoint's metadata (RFC 9728)
//	GET  /.well-known/oauth-protected-resource      the REST API's metadata (RFC 9728)
//	GET  /.well-known/oauth-authorization-server    this server's metadata (RFC 8414)
//	GET  /oauth/authorize                           the consent page (a dashboard session)
//	POST /oauth/authorize                           approve or deny (the session's CSRF token)
//	POST /oauth/token                               authorization_code and refresh_token grants
//	POST /oauth/register                            client registration (every client is public)
//	POST /oauth/revoke                              token revocation
//
// People sign in with the dashboard's session. Approving makes a grant backed by a connector API
// key (http/auth NewConnectorKey), one per client and user: the key is listed and revoked like
// any other, and revoking it refuses the grant's tokens at once. Codes, access tokens and
// refresh tokens are stored as SHA-256 hashes only (persistence/oauth.go).
package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/ratelimit"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// Lifetimes.
const (
	CodeTTL    = 60 * time.Second
	AccessTTL  = time.Hour
	RefreshTTL = 30 * 24 * time.Hour
	// RefreshGrace is how long a rotated refresh token still gets the pair its rotation issued:
	// a client that refreshes from several requests at once, or retries a refresh whose answer
	// it lost, presents the same token more than once.
	RefreshGrace = 60 * time.Second
)

// Paths.
const (
	MCPPath                   = "/mcp"
	ProtectedResourcePath     = "/.well-known/oauth-protected-resource"
	AuthorizationServerPath   = "/.well-known/oauth-authorization-server"
	AuthorizePath             = "/oauth/authorize"
	TokenPath                 = "/oauth/token"
	RegisterPath              = "/oauth/register"
	RevokePath                = "/oauth/revoke"
	defaultRegistrationsPerHr = 100
)

// MCPScopes are the scopes of the MCP endpoint: the umbrellas.
var MCPScopes = []string{auth.ScopeServiceRead, auth.ScopeServiceWrite}

// Config configures the authorization server.
type Config struct {
	Server *server.Server
	Store  *persistence.Store
	// Auth is the key and token authenticator: its cache is dropped after every revocation.
	Auth *auth.Authenticator
	// BaseURL is the public base URL: the issuer, and the REST API's resource.
	BaseURL func() string
	// Now is the clock of every expiry (default time.Now).
	Now func() time.Time
	// RegistrationsPerHour caps the new clients registered per client address (an IPv4 address,
	// or an IPv6 /64) per hour (default 100); a registration that finds its client is not
	// counted.
	RegistrationsPerHour int
	// Sealer seals what the refresh grace keeps of a rotation's pair (the secret box); without
	// one there is no grace.
	Sealer webhook.Sealer
	// Egress fetches client ID metadata documents: the webhooks' SSRF-safe client and URL
	// rules. Without it, URL client ids are not supported.
	Egress *webhook.Guard
	// SweepEvery is the period of the sweep of expired codes and tokens and of unused clients
	// (default 10 min; Run).
	SweepEvery time.Duration
	Registry   prometheus.Registerer
	Log        *slog.Logger
}

// Service is the authorization server.
type Service struct {
	cfg           Config
	registrations *ratelimit.Limiter
	documents     *documentCache
	docClient     *http.Client
	tokens        *prometheus.CounterVec
	registered    *prometheus.CounterVec
	swept         *prometheus.CounterVec
}

// New builds the service; Register adds its routes.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.RegistrationsPerHour <= 0 {
		cfg.RegistrationsPerHour = defaultRegistrationsPerHr
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = DefaultSweepEvery
	}
	s := &Service{cfg: cfg, registrations: ratelimit.New(cfg.Now), swept: newSweptCounter(), documents: newDocumentCache(cfg.Now)}
	if cfg.Egress != nil {
		s.docClient = cfg.Egress.Client()
	}
	s.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_oauth_token_requests_total",
		Help: "OAuth token endpoint requests by grant type (authorization_code, refresh_token, other) and outcome (issued or the OAuth error code).",
	}, []string{"grant_type", "outcome"})
	s.registered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_oauth_registrations_total",
		Help: "OAuth client registrations by outcome (registered, reused, rate_limited, or the OAuth error code).",
	}, []string{"outcome"})
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(s.tokens, s.registered, s.swept, s.documents.fetches)
	}
	return s
}

// Register adds the routes to the server.
func (s *Service) Register() {
	e := s.cfg.Server.Echo
	for _, p := range []string{ProtectedResourcePath + MCPPath, ProtectedResourcePath, AuthorizationServerPath, TokenPath, RegisterPath, RevokePath} {
		e.OPTIONS(p, preflight)
	}
	e.GET(ProtectedResourcePath+MCPPath, s.mcpResourceMetadata, cors)
	e.GET(ProtectedResourcePath, s.restResourceMetadata, cors)
	e.GET(AuthorizationServerPath, s.serverMetadata, cors)
	e.GET(AuthorizePath, s.authorizePage, s.cfg.Server.SecurityHeaders)
	e.POST(AuthorizePath, s.authorizeDecision, s.cfg.Server.SecurityHeaders)
	e.POST(TokenPath, s.token, cors, noStore)
	e.POST(RegisterPath, s.register, cors, noStore)
	e.POST(RevokePath, s.revoke, cors, noStore)
}

func (s *Service) base() string { return strings.TrimRight(s.cfg.BaseURL(), "/") }

// RESTResource is the resource (RFC 8707) of the /v1 API: the base URL.
func (s *Service) RESTResource() string { return s.base() }

// MCPResource is the resource of the MCP endpoint.
func (s *Service) MCPResource() string { return s.base() + MCPPath }

// Browsers' scripts (a web-based MCP host) may read the metadata and call the token,
// registration and revocation endpoints from any origin, unlike /mcp (whose origins are
// configured: http/mcpserver's Origins). None of these endpoints reads a cookie or any other
// credential a browser adds by itself: each request carries what it is worth (a code with its
// PKCE verifier, a refresh token), so a page on another origin gains nothing it did not send,
// and a host's origin cannot be known before it discovers the server. The answer is the same
// for every origin, so it does not vary by Origin. The 401 of a refused client and the 429 of
// registration carry headers the script needs to read.
func cors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		h := c.Response().Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Expose-Headers", "WWW-Authenticate, Retry-After")
		return next(c)
	}
}

// preflight answers the browser's question before a cross-origin POST with a JSON body or an
// Authorization header (and the MCP-Protocol-Version header that MCP clients send with their
// metadata requests).
func preflight(c *echo.Context) error {
	h := c.Response().Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, MCP-Protocol-Version")
	h.Set("Access-Control-Max-Age", "7200")
	return c.NoContent(http.StatusNoContent)
}

func noStore(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		c.Response().Header().Set("Cache-Control", "no-store")
		c.Response().Header().Set("Pragma", "no-cache")
		return next(c)
	}
}

// oauthError is an error answer in the OAuth shape (RFC 6749 5.2).
type oauthError struct {
	Status      int    `json:"-"`
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func (e *oauthError) Error() string { return e.Code + ": " + e.Description }

func fail(status int, code, desc string) *oauthError {
	return &oauthError{Status: status, Code: code, Description: desc}
}

func writeError(c *echo.Context, e *oauthError) error {
	if e.Code == "invalid_client" {
		c.Response().Header().Set("WWW-Authenticate", `Bearer error="invalid_client"`)
	}
	return c.JSON(e.Status, e)
}

// ---- metadata ----

// mcpResourceMetadata is RFC 9728's document for the MCP endpoint.
func (s *Service) mcpResourceMetadata(c *echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{
		"resource": s.MCPResource(), "authorization_servers": []string{s.base()},
		"scopes_supported": MCPScopes, "bearer_methods_supported": []string{"header"},
		"resource_name": "Herald MCP",
	})
}

// restResourceMetadata is RFC 9728's document for the REST API.
func (s *Service) restResourceMetadata(c *echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{
		"resource": s.RESTResource(), "authorization_servers": []string{s.base()},
		"scopes_supported": auth.Scopes, "bearer_methods_supported": []string{"header"},
		"resource_name": "Herald API", "resource_documentation": s.base() + "/v1/openapi.json",
	})
}

// serverMetadata is RFC 8414's document.
func (s *Service) serverMetadata(c *echo.Context) error {
	b := s.base()
	return c.JSON(http.StatusOK, map[string]any{
		"issuer":                                         b,
		"authorization_endpoint":                         b + AuthorizePath,
		"token_endpoint":                                 b + TokenPath,
		"registration_endpoint":                          b + RegisterPath,
		"revocation_endpoint":                            b + RevokePath,
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"revocation_endpoint_auth_methods_supported":     []string{"none"},
		"scopes_supported":                               auth.Scopes,
		"authorization_response_iss_parameter_supported": true,
		"client_id_metadata_document_supported":          s.cfg.Egress != nil,
	})
}

// ---- shared checks ----

// resourceOK reports whether r is one of Herald's two resources.
func (s *Service) resourceOK(r string) bool { return r == s.RESTResource() || r == s.MCPResource() }

// scopesFor parses a requested scope parameter for a resource: the MCP endpoint knows only the
// umbrellas, so other scopes asked of it are left out (RFC 6749 3.3: the token's scope says
// what was granted); an empty request means the connector's default, service:read and
// service:write.
func (s *Service) scopesFor(resource, requested string) ([]string, *oauthError) {
	scopes, ok := auth.ParseScopes(requested)
	if !ok {
		return nil, fail(http.StatusBadRequest, "invalid_scope", "unknown scope; the scopes are: "+strings.Join(auth.Scopes, " "))
	}
	if len(scopes) == 0 {
		return append([]string(nil), MCPScopes...), nil
	}
	if resource == s.MCPResource() {
		var kept []string
		for _, sc := range scopes {
			if sc == auth.ScopeServiceRead || sc == auth.ScopeServiceWrite {
				kept = append(kept, sc)
			}
		}
		if len(kept) == 0 {
			return nil, fail(http.StatusBadRequest, "invalid_scope", "the MCP endpoint's scopes are service:read and service:write")
		}
		scopes = kept
	}
	return scopes, nil
}

// pkceOK checks a code_verifier against an S256 challenge (RFC 7636 4.6).
func pkceOK(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}

// validChallenge reports whether c has the form of an S256 challenge: 43 base64url characters.
func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil
}

// redirectWith adds parameters to a registered redirect URI (keeping its own query).
func redirectWith(uri string, params url.Values) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	q := u.Query()
	for k, vs := range params {
		for _, v := range vs {
			q.Add(k, v)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *Service) storeFailed(c *echo.Context, what string, err error) error {
	s.cfg.Log.Error("oauth: "+what, append(server.LogAttrs(c), "error", err)...)
	return writeError(c, fail(http.StatusInternalServerError, "server_error", "Herald could not complete the request; try again"))
}
