// Package server builds Herald's Echo instance: request ids, panic recovery, body caps and
// timeouts, path parameters decoded once (pathparams.go), the error contract, authentication
// (API keys on /v1; session cookies, CSRF and security headers on the dashboard's /api and pages:
// session.go), per-plan rate limits, deprecation headers, HTTP metrics with bounded label sets,
// health and readiness, /metrics (on its own listener unless MetricsPublic: MetricsHandler), and
// the public listener's connection limits (conns.go).
// Handlers live in http/api.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/ratelimit"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/persistence"
)

// Context keys set by the middleware.
const (
	KeyPrincipal = "herald.principal"
	KeyRequestID = "herald.request_id"
)

// Config configures the server.
type Config struct {
	Log      *slog.Logger
	Registry *prometheus.Registry
	Auth     *auth.Authenticator
	Limiter  ratelimit.Quota
	// PlanLimits are the hourly request quotas per plan (default auth.Plans).
	PlanLimits map[string]int
	// Deprecated maps "METHOD /route/template" to the deprecation of that operation.
	Deprecated map[string]Deprecation
	// LongRunning lists route templates exempt from the per-request write deadline (SSE) or with
	// a long read deadline (uploads).
	LongRunning map[string]bool
	// RequestTimeout bounds reading and writing one ordinary request (default 30s).
	RequestTimeout time.Duration
	// Sessions resolves the dashboard's session cookies (session.go; nil: no dashboard).
	Sessions *session.Manager
	// BaseURL returns the public base URL (cookies are Secure and answers carry HSTS when it is
	// https).
	BaseURL func() string
	// ConnectSources are origins besides the server's own that the dashboard's script may
	// connect to (the policy's connect-src): the S3 endpoint browsers PUT presigned uploads to.
	ConnectSources []string
	// BodyLimits are route templates whose bodies may be larger than DefaultBodyLimit, with their
	// own caps (a campaign's thousand posts).
	BodyLimits map[string]int64
	// Ready, when set, is checked by /readyz once started: its error makes /readyz answer 503
	// with the error as the message (storefault.go).
	Ready ReadyCheck
	// MetricsPublic serves /metrics on the API's own routes too. Off by default: the exposition
	// is unauthenticated, so it is served by MetricsHandler on a listener of its own.
	MetricsPublic bool
	// Overload bounds the write requests served at once (overload.go).
	Overload Overload
	// Requests counts each workspace's /v1 requests for its usage (nil: not counted).
	Requests *RequestCounts
	// TrustedProxies are the reverse proxies whose X-Forwarded-For is believed: ClientAddress is
	// the last address in the chain that is not one of them (none: the connection's peer).
	TrustedProxies []netip.Prefix
}

// DefaultBodyLimit caps a request body, but on BodyLimits' routes and long-running ones.
const DefaultBodyLimit = 1 << 20

// Deprecation is what the OpenAPI document says of a deprecated operation.
// The header is `Deprecation: true`, as the spec writes it (RFC 9745's `@<unix>` form would
// carry Since; the spec's clients look for "true").
type Deprecation struct {
	Since  time.Time  // x-deprecated-at: when the operation was deprecated (the document's record)
	Sunset *time.Time // Sunset: <HTTP-date>, when a removal date is known
}

// Server is the Echo instance with Herald's middleware.
type Server struct {
	Echo  *echo.Echo
	cfg   Config
	csp   string // the dashboard's Content-Security-Policy
	ready atomic.Bool

	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight prometheus.Gauge
	metrics  http.Handler // the exposition of cfg.Registry (nil without one)

	admission       *admission // nil: writes are not limited (overload.go)
	overloadRefused *prometheus.CounterVec
	// shed counts the refusals for overload since the last log line about them, logged at
	// shedLogged (unix nanoseconds).
	shed, shedLogged atomic.Int64
}

// New builds the server. Routes are added by the caller (http/api) through Echo, V1 and Public.
func New(cfg Config) *Server {
	if cfg.PlanLimits == nil {
		cfg.PlanLimits = auth.Plans
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, csp: policy(cfg.ConnectSources)}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_http_requests_total", Help: "HTTP requests by route template, method and status.",
	}, []string{"route", "method", "status"})
	s.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "herald_http_request_duration_seconds", Help: "HTTP request latency by route template and method.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
	}, []string{"route", "method"})
	s.inflight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "herald_http_requests_in_flight", Help: "HTTP requests being served.",
	})
	s.overloadRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_http_overload_refused_total", Help: "Requests refused with 503 because the server was over capacity, by route template and reason (admission, actor, commit_queue, job_backlog).",
	}, []string{"route", "reason"})
	s.admission = newAdmission(cfg.Overload)
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(s.requests, s.duration, s.inflight, s.overloadRefused)
		if s.admission != nil {
			cfg.Registry.MustRegister(s.admission.inflight, s.admission.queued)
		}
	}
	e := echo.NewWithConfig(echo.Config{Logger: cfg.Log, HTTPErrorHandler: s.handleError, NoGroupAutoRegister404Routes: true})
	if len(cfg.TrustedProxies) > 0 {
		opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, p := range cfg.TrustedProxies {
			p = p.Masked()
			opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(opts...)
	}
	e.Pre(escapedPath)
	e.Use(s.observe, s.recover, s.limits, decodePathParams, s.deprecation)
	s.Echo = e
	e.GET("/healthz", func(c *echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", func(c *echo.Context) error {
		if !s.ready.Load() {
			return apierr.Unavailable("Herald is starting or shutting down")
		}
		if err := s.checkReady(c); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	})
	if cfg.Registry != nil {
		s.metrics = promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{Registry: cfg.Registry})
		if cfg.MetricsPublic {
			e.GET("/metrics", echo.WrapHandler(s.metrics))
		}
	}
	return s
}

// MetricsHandler is the handler of the metrics listener: GET /metrics, and /healthz and /readyz
// as the API listener answers them (so that a probe may use either listener). Anything else is a
// plain 404.
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	if s.metrics != nil {
		mux.Handle("GET /metrics", s.metrics)
	}
	mux.Handle("GET /healthz", s.Echo)
	mux.Handle("GET /readyz", s.Echo)
	return mux
}

// SetReady flips readiness.
func (s *Server) SetReady(ok bool) { s.ready.Store(ok) }

// Authenticated is the middleware for routes that need an API key: authentication, then the
// per-plan quota.
func (s *Server) Authenticated(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		p, _ := c.Request().Context().Value(principalKey{}).(*auth.Principal)
		// A principal in the context was verified by Herald itself for the door it came in by
		// (the MCP connector checks its tokens against /mcp's resource); one from the header is
		// checked here.
		fromHeader := p == nil
		var err error
		if fromHeader {
			p, err = s.cfg.Auth.Authenticate(c.Request().Header.Get("Authorization"))
		}
		if err != nil {
			msg := err.Error()
			if !isAuthFailure(err) {
				// The key could not be checked: a database that cannot be reached is 503 (the
				// client retries), as on every route; anything else is Herald's fault.
				if e := StoreFailure(c, s.cfg.Log, err); e != nil {
					return e
				}
				s.cfg.Log.Error("authentication failed", "request_id", RequestID(c), "error", err)
				return apierr.Internal()
			}
			return s.unauthorizedV1(msg)
		}
		// RFC 8707: a token is good only at the resource it was issued for. An access token for
		// the MCP endpoint ({base}/mcp) does not open /v1, whose resource is {base} itself.
		if fromHeader && p.OAuth() && p.Resource != s.base() {
			return s.unauthorizedV1("this access token was issued for " + p.Resource + ", not for this API (" + s.base() + ")")
		}
		p, err = s.inWorkspace(c, p, "")
		if err != nil {
			return err
		}
		c.Set(KeyPrincipal, p)
		s.cfg.Requests.note(p.Scope(), time.Now())
		limit, ok := s.cfg.PlanLimits[p.User.Plan]
		if !ok {
			limit = s.cfg.PlanLimits["free"]
		}
		d := s.cfg.Limiter.Take(p.User.ID, limit)
		if d.Err != nil {
			// The quota shared by several nodes could not be counted: their database is down.
			s.cfg.Log.Warn("request refused: its quota could not be counted", append(LogAttrs(c), "error", d.Err)...)
			return apierr.Unavailable("Herald cannot reach its database right now; nothing was changed, retry shortly")
		}
		reset := int((d.Reset + time.Second - 1) / time.Second)
		setRateLimitHeaders(c.Response().Header(), p.User.Plan, d.Limit, d.Remaining, reset)
		if d.Allowed {
			c.Set(keyQuota, quotaTaken{user: p.User.ID, plan: p.User.Plan, d: d, reset: reset})
		}
		if !d.Allowed {
			return apierr.New(http.StatusTooManyRequests, apierr.CodeRateLimitExceeded,
				"hourly request quota of plan %s (%d requests) exceeded; it resets in %d seconds", p.User.Plan, d.Limit, reset).
				WithHeader("Retry-After", strconv.Itoa(reset)).
				WithDetails(map[string]any{"limit": d.Limit, "reset_seconds": reset, "plan": p.User.Plan})
		}
		return next(c)
	}
}

type principalKey struct{}

// WithPrincipal marks ctx as a request Herald makes to its own /v1 routes on behalf of a caller
// it has already authenticated (the MCP connector's tools, http/mcpserver): Authenticated takes
// the principal from the context instead of an Authorization header, and still counts the request
// against the plan's quota. A context cannot arrive from the network, so no client can set it.
func WithPrincipal(ctx context.Context, p *auth.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// ResourceMetadataPath is the REST API's protected resource metadata (RFC 9728, http/oauth),
// named by every 401 on /v1.
const ResourceMetadataPath = "/.well-known/oauth-protected-resource"

// BaseURL is the server's public base URL without a trailing slash ("" when none is
// configured): the links Herald hands out (an approval link) start with it.
func (s *Server) BaseURL() string { return s.base() }

func (s *Server) base() string {
	if s.cfg.BaseURL == nil {
		return ""
	}
	return strings.TrimRight(s.cfg.BaseURL(), "/")
}

// unauthorizedV1 is the 401 of /v1: the spec's invalid_api_key, with a challenge that names the
// protected resource metadata, where an OAuth client finds the authorization server.
func (s *Server) unauthorizedV1(msg string) *apierr.Error {
	return apierr.New(http.StatusUnauthorized, apierr.CodeInvalidAPIKey, "%s", msg).
		WithHeader("WWW-Authenticate", `Bearer realm="herald", error="invalid_token", resource_metadata="`+s.base()+ResourceMetadataPath+`"`)
}

// RequireScope is the middleware of one /v1 route: an OAuth access token must carry the route's
// scope (scope, "" when only the umbrella covers the route) or the umbrella of its class
// (service:write for a write, service:read for a read); an API key passes. A missing scope is 403
// forbidden with an insufficient_scope challenge naming the scopes that would do.
func RequireScope(scope string, write bool) echo.MiddlewareFunc {
	umbrella := auth.ScopeServiceRead
	if write {
		umbrella = auth.ScopeServiceWrite
	}
	need := umbrella
	if scope != "" {
		need = scope + " " + umbrella
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			if p := Principal(c); p != nil && !p.Allows(scope, write) {
				what := "this access token"
				if !p.OAuth() {
					what = "this API key"
				}
				return apierr.New(http.StatusForbidden, apierr.CodeForbidden,
					"%s lacks the scope this operation needs: one of %s", what, need).
					WithHeader("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+need+`"`)
			}
			return next(c)
		}
	}
}

// setRateLimitHeaders writes the five rate-limit headers of every authenticated response (in
// their canonical form, set directly: this runs on every request).
func setRateLimitHeaders(h http.Header, plan string, limit, remaining, reset int) {
	// Every request answers these five headers: their values are cut from one string and held in
	// one array, two allocations where one each took ten.
	var buf [160]byte
	b := strconv.AppendInt(buf[:0], int64(limit), 10)
	limitEnd := len(b)
	b = strconv.AppendInt(b, int64(remaining), 10)
	remainingEnd := len(b)
	b = strconv.AppendInt(b, int64(reset), 10)
	resetEnd := len(b)
	b = strconv.AppendQuote(b, plan)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, int64(limit), 10)
	b = append(b, ";w="...)
	b = strconv.AppendInt(b, int64(ratelimit.Window/time.Second), 10)
	policyEnd := len(b)
	b = strconv.AppendQuote(b, plan)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, int64(remaining), 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, int64(reset), 10)
	all := string(b)
	v := [...]string{all[:limitEnd], all[limitEnd:remainingEnd], all[remainingEnd:resetEnd], all[resetEnd:policyEnd], all[policyEnd:]}
	vs := v[:]
	// Each value's slice is capped at its one element, so that an Add appends to a copy.
	h["Ratelimit-Limit"] = vs[0:1:1]
	h["Ratelimit-Remaining"] = vs[1:2:2]
	h["Ratelimit-Reset"] = vs[2:3:3]
	h["Ratelimit-Policy"] = vs[3:4:4]
	h["Ratelimit"] = vs[4:5:5]
}

func isAuthFailure(err error) bool {
	for _, e := range []error{auth.ErrMissing, auth.ErrMalformed, auth.ErrUnknown, auth.ErrRevoked, auth.ErrExpired, auth.ErrTokenExpired} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Principal returns the authenticated principal of the request.
func Principal(c *echo.Context) *auth.Principal {
	p, _ := c.Get(KeyPrincipal).(*auth.Principal)
	return p
}

// RequestID returns the request's id.
func RequestID(c *echo.Context) string {
	id, _ := c.Get(KeyRequestID).(string)
	return id
}

// LogAttrs are the attributes every log line about a request carries: its request_id and, once
// authenticated, the user_id (ids are fine in logs, never secrets: no key, token or body).
func LogAttrs(c *echo.Context) []any {
	attrs := []any{"request_id", RequestID(c)}
	if p := Principal(c); p != nil && p.User != nil {
		attrs = append(attrs, "user_id", p.User.ID)
		if p.Member != nil {
			attrs = append(attrs, "member_id", p.Member.ID) // who of the user's team asked
		}
	}
	return attrs
}

// Logger is base with the request's LogAttrs, for handlers that log about a request.
func Logger(c *echo.Context, base *slog.Logger) *slog.Logger { return base.With(LogAttrs(c)...) }

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if r < 0x21 || r > 0x7e {
			return false
		}
	}
	return true
}

// observe assigns the request id, handles errors in place so that the final status is known, and
// records metrics and the access log.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		start := time.Now()
		s.inflight.Inc()
		defer s.inflight.Dec()
		id := c.Request().Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = newRequestID()
		}
		c.Set(KeyRequestID, id)
		c.Response().Header().Set("X-Request-Id", id)
		shed := false
		if err := next(c); err != nil {
			shed = s.countOverload(c, err)
			s.handleError(c, err)
		}
		route := routeLabel(c)
		_, status := echo.ResolveResponseStatus(c.Response(), nil)
		method := methodLabel(c.Request().Method)
		s.requests.WithLabelValues(route, method, statusLabel(status)).Inc()
		s.duration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
		// The access log: one line per request at debug level (a busy server answers thousands of
		// requests a second), server errors at warn, except refusals for overload: there may be
		// thousands a second, and countOverload sums them up in one line a minute.
		level := slog.LevelDebug
		if status >= 500 && !shed {
			level = slog.LevelWarn
		}
		if ctx := c.Request().Context(); s.cfg.Log.Enabled(ctx, level) {
			msg := "request"
			if status >= 500 {
				msg = "request failed"
			}
			s.cfg.Log.Log(ctx, level, msg, append(LogAttrs(c), "method", c.Request().Method, "route", route, "status", status,
				"duration_ms", float64(time.Since(start).Microseconds())/1000)...)
		}
		return nil
	}
}

// The labels of the HTTP metrics are bounded whatever clients send: every distinct label value
// is a series kept in memory for the life of the process, so none may come from the request as
// it was sent. The route is a registered template or "unmatched", the method one of the methods
// Herald serves or "other", the status a valid HTTP status code or "other".

// unmatchedRoute is the route label of a request no route's path matched.
const unmatchedRoute = "unmatched"

// routeLabel is the route template the request matched. A path that matched a route but not its
// method (405, or Echo's answer to OPTIONS) keeps that route's template: a registered one, so the
// set stays bounded. A path that matched no route is "unmatched", never the path itself.
func routeLabel(c *echo.Context) string {
	route := c.Path()
	if route == "" || c.RouteInfo().Name == echo.NotFoundRouteName {
		return unmatchedRoute
	}
	return route
}

// methodLabel is the request's method when Herald serves it, else "other": Go's server accepts
// any token as a method, and each one would otherwise add a series.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// statusLabel is the response's status code, or "other" outside 100-599.
func statusLabel(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status)
}

// recover turns a panic into a 500 with no stack trace in the response; the stack goes to the log
// with the request id.
func (s *Server) recover(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.cfg.Log.Error("panic while serving a request", append(LogAttrs(c), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))...)
				err = apierr.Internal()
			}
		}()
		return next(c)
	}
}

// limits caps JSON bodies and sets per-request read and write deadlines, except on long-running
// routes (SSE streams, uploads), which manage their own.
func (s *Server) limits(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if s.cfg.LongRunning[c.Path()] {
			return next(c)
		}
		r := c.Request()
		limit := int64(DefaultBodyLimit)
		if l, ok := s.cfg.BodyLimits[c.Path()]; ok {
			limit = l
		}
		if r.ContentLength > 2*limit {
			return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeValidation, "request body is larger than %d bytes", limit)
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, limit+1)
		rc := http.NewResponseController(c.Response())
		deadline := time.Now().Add(s.cfg.RequestTimeout)
		_ = rc.SetReadDeadline(deadline)
		_ = rc.SetWriteDeadline(deadline.Add(5 * time.Second))
		return next(c)
	}
}

// deprecation adds Deprecation and Sunset to operations the OpenAPI document marks deprecated.
func (s *Server) deprecation(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if d, ok := s.cfg.Deprecated[c.Request().Method+" "+c.Path()]; ok {
			h := c.Response().Header()
			h.Set("Deprecation", "true")
			if d.Sunset != nil {
				h.Set("Sunset", d.Sunset.UTC().Format(http.TimeFormat))
			}
		}
		return next(c)
	}
}

// handleError writes any error in the spec's shape.
func (s *Server) handleError(c *echo.Context, err error) {
	if resp, _ := echo.UnwrapResponse(c.Response()); resp != nil && resp.Committed {
		return
	}
	var ae *apierr.Error
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &mbe):
		ae = apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeValidation, "request body is larger than %d bytes", mbe.Limit-1)
	case errors.Is(err, persistence.ErrWriteFailed), errors.Is(err, persistence.ErrUnavailable), errors.Is(err, persistence.ErrFenced):
		ae = StoreFailure(c, s.cfg.Log, err)
	case errors.Is(err, cluster.ErrUnavailable):
		ae = ClusterUnavailable(c, s.cfg.Log, "object")
	default:
		switch code := echo.StatusCode(err); code {
		case http.StatusNotFound:
			ae = apierr.New(code, apierr.CodeNotFound, "no route %s %s", c.Request().Method, c.Request().URL.Path)
		case http.StatusMethodNotAllowed:
			ae = apierr.New(code, apierr.CodeNotFound, "method %s is not allowed on %s", c.Request().Method, c.Request().URL.Path)
		case http.StatusRequestEntityTooLarge:
			ae = apierr.New(code, apierr.CodeValidation, "request body is too large")
		case 0, http.StatusInternalServerError:
			s.cfg.Log.Error("request error", append(LogAttrs(c), "error", err)...)
			ae = apierr.Internal()
		default:
			ae = apierr.New(code, apierr.CodeValidation, "%s", http.StatusText(code))
		}
	}
	for k, vs := range ae.Header {
		for _, v := range vs {
			c.Response().Header().Set(k, v)
		}
	}
	if c.Response().Header().Get("Content-Security-Policy") == "" && browserError(c.Request().URL.Path) {
		s.setSecurityHeaders(c.Response().Header())
	}
	ct := "application/json"
	if prefersProblem(c.Request().Header.Get("Accept")) {
		ct = "application/problem+json"
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(ae.Status)
		return
	}
	c.Response().Header().Set("Content-Type", ct)
	_ = c.JSON(ae.Status, ae.Body())
}

// prefersProblem reports whether an Accept header ranks application/problem+json above
// application/json.
func prefersProblem(accept string) bool {
	if accept == "" {
		return false
	}
	problem, jsonQ := -1.0, -1.0
	for _, part := range strings.Split(accept, ",") {
		fields := strings.Split(part, ";")
		mt := strings.ToLower(strings.TrimSpace(fields[0]))
		q := 1.0
		for _, f := range fields[1:] {
			k, v, ok := strings.Cut(strings.TrimSpace(f), "=")
			if ok && strings.TrimSpace(k) == "q" {
				if x, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = x
				}
			}
		}
		switch mt {
		case "application/problem+json":
			problem = q
		case "application/json":
			jsonQ = q
		}
	}
	return problem > 0 && problem >= jsonQ
}

// Usage is a user's API usage in the current hourly window: requests counted, the plan's limit,
// and the time until the window closes (0 when none is open). It counts nothing.
func (s *Server) Usage(userID, plan string) (used, limit int, reset time.Duration) {
	limit, ok := s.cfg.PlanLimits[plan]
	if !ok {
		limit = s.cfg.PlanLimits["free"]
	}
	if s.cfg.Limiter == nil {
		return 0, limit, 0
	}
	used, reset = s.cfg.Limiter.Peek(userID)
	return used, limit, reset
}

// Mount serves h (a plain net/http handler, such as the MCP endpoint's) at path for methods.
func (s *Server) Mount(path string, h http.Handler, methods ...string) {
	eh := echo.WrapHandler(h)
	for _, m := range methods {
		s.Echo.Add(m, path, eh)
	}
}

// RefuseWhile is the drain's middleware (docs/operations.md, Shutdown and crashes): while
// draining says so, every request but the probes (/healthz, /readyz, /metrics) and those spare
// keeps (by method and route template) is answered 503 internal_error with Retry-After and
// Connection: close, before anything of it is done.
func RefuseWhile(draining func() bool, spare func(method, route string) bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			if !draining() {
				return next(c)
			}
			switch c.Request().URL.Path {
			case "/healthz", "/readyz", "/metrics":
				return next(c)
			}
			if spare != nil && spare(c.Request().Method, c.Path()) {
				return next(c)
			}
			c.Response().Header().Set("Connection", "close")
			return apierr.Unavailable("Herald is shutting down; retry shortly")
		}
	}
}

// Requests is the server's count of each workspace's /v1 requests (nil when not counted).
func (s *Server) Requests() *RequestCounts { return s.cfg.Requests }
