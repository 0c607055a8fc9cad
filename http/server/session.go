package server

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/persistence"
)

// KeySession is the context key of the request's dashboard session.
const KeySession = "herald.session"

// CSRFHeader and CSRFField carry a session's CSRF token on state-changing dashboard requests:
// the header for scripts, the form field for HTML forms.
const (
	CSRFHeader = "X-CSRF-Token"
	CSRFField  = "csrf_token"
)

// ContentSecurityPolicy is the policy of every dashboard page and /api answer: nothing inline,
// nothing from elsewhere, no framing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// policy is ContentSecurityPolicy with a connect-src naming the other origins the dashboard's
// script may reach (none: default-src 'self' covers its own requests).
func policy(connect []string) string {
	if len(connect) == 0 {
		return ContentSecurityPolicy
	}
	return strings.Replace(ContentSecurityPolicy, "img-src 'self' data:; ",
		"img-src 'self' data:; connect-src 'self' "+strings.Join(connect, " ")+"; ", 1)
}

// ContentSecurityPolicy is the policy the dashboard's pages and /api answers carry on this
// server: the constant, plus connect-src when uploads go to another origin.
func (s *Server) ContentSecurityPolicy() string { return s.csp }

// Secure reports whether the server's public base URL is https (cookies are then Secure and
// answers carry HSTS).
func (s *Server) Secure() bool {
	return s.cfg.BaseURL != nil && strings.HasPrefix(strings.ToLower(s.cfg.BaseURL()), "https://")
}

// PublicURL is path on the server's public base URL (path alone when none is configured): the
// address of a link Herald hands someone to open elsewhere (an invitation).
func (s *Server) PublicURL(path string) string { return s.base() + path }

// Sessions is the session manager (nil when the dashboard is off).
func (s *Server) Sessions() *session.Manager { return s.cfg.Sessions }

// SecurityHeaders sets the headers of every dashboard page and /api answer: the CSP, no framing,
// no sniffing, same-origin referrers, no caching, and HSTS behind an https base URL.
func (s *Server) SecurityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		s.setSecurityHeaders(c.Response().Header())
		return next(c)
	}
}

func (s *Server) setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", s.csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if s.Secure() {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
}

// browserError reports whether an error answer on this path is the dashboard's: everything
// outside /v1 (the /api door, the pages, an unknown address a browser was sent to). Such
// answers carry the security headers even when they leave before the route's own middleware:
// a 413 from the body limit, a 404 for an unknown path, a 405.
func browserError(path string) bool {
	return path != "/v1" && !strings.HasPrefix(path, "/v1/")
}

// unauthorized is the 401 of the dashboard's routes.
func unauthorized(format string, args ...any) *apierr.Error {
	return apierr.New(http.StatusUnauthorized, apierr.CodeUnauthorized, format, args...)
}

// SessionFromCookie resolves the request's session cookie: nil, nil when there is none or it is
// no longer valid.
func (s *Server) SessionFromCookie(c *echo.Context) (*session.Session, error) {
	if s.cfg.Sessions == nil {
		return nil, nil
	}
	ck, err := c.Request().Cookie(session.CookieName)
	if err != nil {
		return nil, nil
	}
	sess, err := s.cfg.Sessions.Lookup(c.Request().Context(), ck.Value)
	if errors.Is(err, session.ErrNoSession) || errors.Is(err, session.ErrExpired) {
		return nil, nil
	}
	return sess, err
}

// SessionAuth is the middleware of the dashboard's /api routes: a session cookie, never an API
// key, then the CSRF token on every request that is not GET, HEAD or OPTIONS.
func (s *Server) SessionAuth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if c.Request().Header.Get("Authorization") != "" {
			return unauthorized("API keys do not open the dashboard's /api routes (they open /v1); sign in with POST /api/session")
		}
		if s.cfg.Sessions == nil {
			return unauthorized("not signed in")
		}
		ck, err := c.Request().Cookie(session.CookieName)
		if err != nil {
			return unauthorized("not signed in: sign in with POST /api/session")
		}
		sess, err := s.cfg.Sessions.Lookup(c.Request().Context(), ck.Value)
		switch {
		case errors.Is(err, session.ErrNoSession):
			return unauthorized("the session is not valid (signed out, or ended by a password change); sign in again")
		case errors.Is(err, session.ErrExpired):
			return unauthorized("%s", err.Error())
		case err != nil:
			s.cfg.Log.Error("session lookup failed", "request_id", RequestID(c), "error", err)
			return apierr.Internal()
		}
		c.Set(KeySession, sess)
		p, err := s.SessionPrincipal(c, sess)
		if err != nil {
			return err
		}
		c.Set(KeyPrincipal, p)
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if !sess.CheckCSRF(CSRFToken(c)) {
				return apierr.New(http.StatusForbidden, apierr.CodeForbidden,
					"missing or wrong CSRF token: send the session's csrf_token in the %s header", CSRFHeader)
			}
		}
		return next(c)
	}
}

// SessionPrincipal is who a dashboard session's request acts for, in the workspace it names (the
// Herald-Workspace header, else the session's choice, else main): the /api door and the
// dashboard's pages both use it.
//
// A member of a team acts for its owner (auth.MemberOf): the principal's User is the owner, so
// that every handler uses the owner's plan and data unchanged, and Member and Role say who asks.
// A member limited to some of the owner's workspaces opens only those: any other is 403
// forbidden, whether the header or the session's choice names it; with neither, they start in
// the first one allowed (main when allowed).
func (s *Server) SessionPrincipal(c *echo.Context, sess *session.Session) (*auth.Principal, error) {
	if sess.Member == nil {
		return s.inWorkspace(c, &auth.Principal{User: sess.User}, sess.Record.WorkspaceID)
	}
	m := sess.Member
	chosen := sess.Record.WorkspaceID
	if chosen == "" && !m.Allows(persistence.MainWorkspace) && len(m.Workspaces) > 0 {
		chosen = m.Workspaces[0]
	}
	p, err := s.inWorkspace(c, auth.MemberOf(sess.Owner, sess.User, m), chosen)
	if err != nil {
		return nil, err
	}
	if !m.Allows(p.WorkspaceID) {
		return nil, apierr.New(http.StatusForbidden, apierr.CodeForbidden,
			"your membership of this team does not include workspace %s", p.WorkspaceID)
	}
	return p, nil
}

// CSRFToken is the CSRF token a request carries: its X-CSRF-Token header, or for an HTML form
// (application/x-www-form-urlencoded) its csrf_token field.
func CSRFToken(c *echo.Context) string {
	if t := c.Request().Header.Get(CSRFHeader); t != "" {
		return t
	}
	if isForm(c.Request()) {
		if err := c.Request().ParseForm(); err == nil {
			return c.Request().PostForm.Get(CSRFField)
		}
	}
	return ""
}

func isForm(r *http.Request) bool {
	ct := strings.ToLower(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
	return ct == "application/x-www-form-urlencoded"
}

// Session returns the request's dashboard session (nil outside SessionAuth).
func Session(c *echo.Context) *session.Session {
	sess, _ := c.Get(KeySession).(*session.Session)
	return sess
}

// SameSite reports whether a sign-in request comes from Herald's own pages or from no page at
// all (curl, a script): a browser's Sec-Fetch-Site of same-origin or none, and an Origin, when
// sent, equal to the request's own origin or to the base URL's. A cross-site sign-in POST (login
// CSRF) is refused.
func (s *Server) SameSite(c *echo.Context) bool {
	r := c.Request()
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	o, err := url.Parse(origin)
	if err != nil || o.Host == "" {
		return false // "null" included
	}
	if strings.EqualFold(o.Host, r.Host) {
		return true
	}
	if s.cfg.BaseURL != nil {
		if b, err := url.Parse(s.cfg.BaseURL()); err == nil && strings.EqualFold(b.Scheme, o.Scheme) && strings.EqualFold(b.Host, o.Host) {
			return true
		}
	}
	return false
}

// ClientAddress is the address sign-ins and OAuth registrations are counted by: the
// connection's peer, or, when the peer is one of Config.TrustedProxies, the last address of
// X-Forwarded-For that is not (X-Forwarded-For is believed only from those proxies, since anyone
// can send it).
func ClientAddress(c *echo.Context) string {
	if a := c.RealIP(); a != "" {
		return a
	}
	return c.Request().RemoteAddr
}

// SetSessionCookie sets the session cookie: HttpOnly, SameSite=Lax, Path=/, Secure behind an
// https base URL, lasting as long as the session may.
func (s *Server) SetSessionCookie(c *echo.Context, token string) {
	c.SetCookie(&http.Cookie{
		Name: session.CookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: s.Secure(), MaxAge: int(s.cfg.Sessions.MaxAge().Seconds()),
	})
}

// ClearSessionCookie removes the session cookie from the browser.
func (s *Server) ClearSessionCookie(c *echo.Context) {
	c.SetCookie(&http.Cookie{Name: session.CookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: s.Secure(), MaxAge: -1})
}

// UserChanged drops the API-key cache, whose principals carry the user record, after a change to
// a user (a profile edit).
func (s *Server) UserChanged() {
	if s.cfg.Auth != nil {
		s.cfg.Auth.Invalidate()
	}
}
