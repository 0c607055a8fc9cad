// Package connector is Herald's MCP server (the spec's connector for AI hosts): one set of tools
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
// Today the only verifier is APIKeys (keys carry no scopes: every scope is granted); OAuth access
// tokens plug in as another TokenVerifier without touching the tools. Each tool needs one scope,
// service:read or service:write (Tools lists them), checked at call time.
package connector

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
			return nil, fmt.Errorf("%w: the access token was issued for another resource (%s)", ErrInvalidToken, p.Resource)
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
		info := sdkauth.TokenInfoFromContext(r.Context())
		var g *Grant
		if info != nil {
			g, _ = info.Extra[grantKey].(*Grant)
		}
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
	// URL, and the one public Host a request may carry on a loopback listener.
	BaseURL func() string
}

// Handler is POST, GET and DELETE /mcp: the bearer check, the Host check, then the SDK's
// stateless Streamable HTTP handler. Body caps and deadlines are the server's own middleware, as
// on /v1.
func Handler(cfg HandlerConfig) http.Handler {
	srv := cfg.Tools.Server()
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true,
		// The SDK's DNS-rebinding check refuses any Host but localhost on a loopback listener,
		// which also refuses a reverse proxy forwarding the public Host: checkHost below allows
		// the --base-url host as well.
		DisableLocalhostProtection: true,
	})
	bearer := requireBearer(cfg.Verifier, mcpHandler)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		base := strings.TrimRight(cfg.BaseURL(), "/")
		if !hostAllowed(r, base) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return
		}
		bearer.ServeHTTP(&challenger{ResponseWriter: w, challenge: Challenge(base)}, r)
	})
}

// requireBearer is the bearer check in front of next: the SDK's middleware with the verifier's
// grant in the token info, and the request's context held to the credential (held).
func requireBearer(v TokenVerifier, next http.Handler) http.Handler {
	verify := func(ctx context.Context, token string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		g, err := v.Verify(ctx, token)
		if err != nil {
			return nil, err
		}
		info := &sdkauth.TokenInfo{Scopes: g.Scopes, Expiration: g.Expires, Extra: map[string]any{grantKey: g}}
		if g.Principal != nil && g.Principal.User != nil {
			info.UserID = g.Principal.User.ID
		}
		return info, nil
	}
	return sdkauth.RequireBearerToken(verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(held(v, next))
}

// Challenge is the WWW-Authenticate value of a 401 on /mcp: where the protected resource
// metadata is (served by the OAuth authorization server) and the scopes to ask for.
func Challenge(base string) string {
	return fmt.Sprintf(`Bearer resource_metadata=%q, scope=%q`, base+"/.well-known/oauth-protected-resource"+Path, strings.Join(AllScopes, " "))
}

// challenger sets the challenge on a 401 (the SDK's middleware names scopes only when it also
// requires them all, and a read-only grant must still reach the read tools).
type challenger struct {
	http.ResponseWriter
	challenge string
}

func (c *challenger) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		c.Header().Set("WWW-Authenticate", c.challenge)
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *challenger) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (c *challenger) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
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
