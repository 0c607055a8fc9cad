// Package mcpserver is Herald's MCP server (the spec's connector for AI hosts): one set of tools
// (tools.go) served over Streamable HTTP at /mcp behind a bearer check (this file), and over stdio
// by `herald mcp` for a local host.
//
// The tools hold no rules of their own. Each one is a thin call of a /v1 operation through the
// API interface (api.go): in the server, InProcess hands the request to Herald's own Echo instance
// with the caller's principal in the context, so it runs the same middleware, validation and
// quota as a program's request; in `herald mcp`, Remote sends it over HTTP with the API key from
// the environment.
//
// Who may call: a TokenVerifier turns the bearer token into a Grant (a principal and its scopes).
// APIKeys verifies API keys (no scopes of their own: every scope is granted) and OAuth access
// tokens issued for /mcp (the scopes the user approved). Each tool needs one scope, service:read
// or service:write (Tools lists them): a token sees only the tools its scopes cover, and a call
// of another is refused at the HTTP door with 403 insufficient_scope (scope.go). Browsers are
// let in by origin (origin.go).
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
)

// Path is where the server answers MCP (the spec's {mcp_url} is the base URL plus Path).
const Path = "/mcp"

// The connector's scopes (spec, Authentication 9): the umbrella read and write scopes.
const (
	ScopeRead  = "service:read"
	ScopeWrite = "service:write"
)

// AllScopes is what a grant without restrictions holds, and what the 401 challenge names.
var AllScopes = []string{ScopeRead, ScopeWrite}

// Grant is what a verified bearer token allows: whom the tools act for, and in which scopes.
type Grant struct {
	Principal *auth.Principal
	Scopes    []string
	// Expires is when the token stops working (zero: no expiry of its own).
	Expires time.Time
}

// Has reports whether the grant holds scope.
func (g *Grant) Has(scope string) bool {
	for _, s := range g.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// ErrInvalidToken wraps every refusal of a token: the caller gets a 401 with the challenge.
var ErrInvalidToken = sdkauth.ErrInvalidToken

// TokenVerifier checks a bearer token. A refusal wraps ErrInvalidToken; any other error is a
// server failure (500).
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (*Grant, error)
}

// APIKeys verifies the bearer of /mcp with the same authenticator as /v1: a plain sk_live_ API
// key carries no scopes, so its grant holds every scope; an OAuth access token (http/oauth) holds
// the scopes it was granted, and only when it was issued for this resource (RFC 8707: a token
// for the REST API is no token for /mcp).
type APIKeys struct {
	Auth *auth.Authenticator
	// Resource returns /mcp's resource URL ({base}/mcp); nil refuses every OAuth token.
	Resource func() string
}

var _ TokenVerifier = APIKeys{}

// Verify implements TokenVerifier.
func (v APIKeys) Verify(_ context.Context, token string) (*Grant, error) {
	p, err := v.Auth.Authenticate("Bearer " + token)
	for _, e := range []error{auth.ErrMissing, auth.ErrMalformed, auth.ErrUnknown, auth.ErrRevoked, auth.ErrExpired, auth.ErrTokenExpired} {
		if errors.Is(err, e) {
			return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
		}
	}
	if err != nil {
		return nil, err
	}
	if p.OAuth() {
		if v.Resource == nil || p.Resource != v.Resource() {
			return nil, fmt.Errorf("%w (%s)", ErrWrongResource, p.Resource)
		}
		return &Grant{Principal: p, Scopes: p.Scopes, Expires: p.TokenExpiresAt}, nil
	}
	g := &Grant{Principal: p, Scopes: AllScopes}
	if p.Key.ExpiresAt != nil {
		g.Expires = *p.Key.ExpiresAt
	}
	return g, nil
}

// Holder is a TokenVerifier that can also tie a response to the credential it verified
// (auth.Authenticator.Hold): the context it returns ends when the credential is revoked,
// regenerated or expires.
type Holder interface {
	Hold(p *auth.Principal) (context.Context, func())
}

// Hold implements Holder.
func (v APIKeys) Hold(p *auth.Principal) (context.Context, func()) { return v.Auth.Hold(p) }

// held runs next with a request context that also ends when the credential of the request's
// grant stops working, so that a response streamed on /mcp (the SSE answer to a POST) ends when
// its key is revoked, as /v1's job streams do.
func held(v TokenVerifier, next http.Handler) http.Handler {
	h, ok := v.(Holder)
	if !ok {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := grantIn(r.Context())
		if g == nil || g.Principal == nil {
			next.ServeHTTP(w, r)
			return
		}
		hctx, release := h.Hold(g.Principal)
		defer release()
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		stop := context.AfterFunc(hctx, func() { cancel(context.Cause(hctx)) })
		defer stop()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// HandlerConfig configures the HTTP door.
type HandlerConfig struct {
	Tools    *Tools
	Verifier TokenVerifier
	// BaseURL returns Herald's public base URL (--base-url): the challenge's resource metadata
	// URL, the one public Host a request may carry on a loopback listener, and an origin always
	// allowed.
	BaseURL func() string
	// Origins are the browser origins allowed besides the base URL's (--cors-origins; nil: the
	// base URL's only).
	Origins *Origins
	// Registry receives herald_mcp_refusals_total (nil: unregistered).
	Registry prometheus.Registerer
	// Log receives the verifier's failures (a store that cannot be read: 500).
	Log *slog.Logger
}

// Handler is OPTIONS, POST, GET and DELETE /mcp, in this order: the Host check, the Origin check
// and CORS (origin.go), the bearer check (401), the scope check of tools/call (403, scope.go),
// then the SDK's stateless Streamable HTTP handler. Body caps and deadlines are the server's own
// middleware, as on /v1.
//
// Handler adds its receiving middleware (serverMiddleware) to the tools' MCP server once, when
// it is built: the server is shared by every request and is not changed afterwards.
func Handler(cfg HandlerConfig) http.Handler {
	srv := cfg.Tools.Server()
	scopes := toolScopes(cfg.Tools)
	srv.AddReceivingMiddleware(serverMiddleware(scopes))
	refusals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_mcp_refusals_total",
		Help: "Requests /mcp refused before the MCP server, by reason (host, origin, missing_token, invalid_token, insufficient_scope).",
	}, []string{"reason"})
	for _, r := range []string{"host", "origin", "missing_token", "invalid_token", "insufficient_scope"} {
		refusals.WithLabelValues(r)
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(refusals)
	}
	refused := func(reason string) { refusals.WithLabelValues(reason).Inc() }
	base := func() string { return strings.TrimRight(cfg.BaseURL(), "/") }
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true,
		// The SDK's DNS-rebinding check refuses any Host but localhost on a loopback listener,
		// which also refuses a reverse proxy forwarding the public Host: hostAllowed below allows
		// the --base-url host as well.
		DisableLocalhostProtection: true,
	})
	inner := withCORS(cfg.Origins, base, refused,
		authenticate(cfg.Verifier, base, refused, cfg.Log,
			requireToolScopes(scopes, base, refused, held(cfg.Verifier, mcpHandler))))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r, base()) {
			refused("host")
			writeJSONRPCError(w, http.StatusForbidden, nil, codeForbidden, fmt.Sprintf("invalid Host header %q", r.Host), nil)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// ErrWrongResource refuses an OAuth access token issued for another resource (RFC 8707).
var ErrWrongResource = fmt.Errorf("%w: the access token was issued for another resource", ErrInvalidToken)

// authenticate is the bearer check in front of next: a request without a bearer token, or
// whose token the verifier refuses, is answered 401 with the challenge (unauthorized); a
// verified one reaches next with its grant in the SDK's token info (requireBearer).
func authenticate(v TokenVerifier, base func() string, refused func(string), log *slog.Logger, next http.Handler) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	inner := requireBearer(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fields := strings.Fields(r.Header.Get("Authorization"))
		if len(fields) != 2 || !strings.EqualFold(fields[0], "Bearer") {
			refused("missing_token")
			unauthorized(w, base(), nil)
			return
		}
		g, err := v.Verify(r.Context(), fields[1])
		if errors.Is(err, ErrInvalidToken) {
			refused("invalid_token")
			unauthorized(w, base(), err)
			return
		}
		if err != nil {
			log.Error("mcp: the bearer token could not be checked", "error", err)
			writeAPIError(w, apierr.Internal())
			return
		}
		info := &sdkauth.TokenInfo{Scopes: g.Scopes, Extra: map[string]any{grantKey: g}}
		if g.Principal != nil && g.Principal.User != nil {
			info.UserID = g.Principal.User.ID
		}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), verifiedKey{}, info)))
	})
}

type verifiedKey struct{}

// requireBearer puts the token info authenticate verified where the SDK's handler finds it
// (req.Extra.TokenInfo of every tool call), through the SDK's own bearer middleware. The token
// info carries no expiry: the verifier has refused an expired token, and held ends a response
// when its credential expires.
func requireBearer(next http.Handler) http.Handler {
	verify := func(ctx context.Context, _ string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		if info, ok := ctx.Value(verifiedKey{}).(*sdkauth.TokenInfo); ok {
			return info, nil
		}
		return nil, ErrInvalidToken
	}
	return sdkauth.RequireBearerToken(verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
}

func resourceMetadata(base string) string {
	return base + "/.well-known/oauth-protected-resource" + Path
}

// Challenge is the WWW-Authenticate value of a 401 on /mcp for a request without a token:
// where the protected resource metadata is (served by the OAuth authorization server) and the
// scopes to ask for.
func Challenge(base string) string {
	return fmt.Sprintf(`Bearer resource_metadata=%q, scope=%q`, resourceMetadata(base), strings.Join(AllScopes, " "))
}

// unauthorized answers 401 invalid_api_key (the spec's code of every 401) with the challenge:
// for a request without a bearer token, the bare challenge (RFC 6750 3.1: no error code); for a
// refused token, error="invalid_token" with what is wrong with it, in OAuth's words.
func unauthorized(w http.ResponseWriter, base string, err error) {
	challenge, msg := Challenge(base), "missing bearer token: send Authorization: Bearer with an OAuth access token for "+base+Path+" or an API key"
	if err != nil {
		msg = tokenProblem(err, base)
		challenge = fmt.Sprintf(`Bearer error="invalid_token", error_description=%q, resource_metadata=%q, scope=%q`,
			msg, resourceMetadata(base), strings.Join(AllScopes, " "))
	}
	w.Header().Set("WWW-Authenticate", challenge)
	writeAPIError(w, apierr.New(http.StatusUnauthorized, apierr.CodeInvalidAPIKey, "%s", msg))
}

// tokenProblem says what is wrong with a refused token.
func tokenProblem(err error, base string) string {
	switch {
	case errors.Is(err, ErrWrongResource):
		return "the access token was issued for another resource, not " + base + Path
	case errors.Is(err, auth.ErrTokenExpired), errors.Is(err, auth.ErrExpired):
		return "the access token expired"
	case errors.Is(err, auth.ErrRevoked):
		return "the access token was revoked"
	case errors.Is(err, auth.ErrMalformed):
		return "the access token is malformed"
	default:
		return "the access token is not valid"
	}
}

func writeAPIError(w http.ResponseWriter, e *apierr.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e.Body())
}

// hostAllowed is the DNS-rebinding protection: a request that reached a loopback listener must
// name a loopback host or the host of the base URL.
func hostAllowed(r *http.Request, base string) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !loopback(local.String()) {
		return true
	}
	if loopback(r.Host) {
		return true
	}
	u, err := url.Parse(base)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

func loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

const grantKey = "herald.grant"

// grantOf is the grant of a tool call: the verified token's on HTTP, nil over stdio (the local
// process holds the key itself, and every scope).
func grantOf(req *mcp.CallToolRequest) *Grant {
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return nil
	}
	g, _ := req.Extra.TokenInfo.Extra[grantKey].(*Grant)
	return g
}
