package api_test

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/http/mcpserver"
	"github.com/heraldhq/herald/http/server"
	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"
)

// Every route registered in Echo is documented, and every documented operation is registered,
// but the dashboard's, which are not the public API.
func TestRoutesMatchTheDocument(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	doc, err := api.Spec()
	require.NoError(t, err)
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+api.EchoPath(path)] = true
		}
	}
	registered := map[string]bool{}
	for _, r := range h.App.Server.Echo.Router().Routes() {
		// CORS preflights (OPTIONS on the OAuth endpoints) are not operations.
		if r.Method == echo.RouteNotFound || r.Method == http.MethodOptions || strings.HasSuffix(r.Path, "*") {
			continue
		}
		// The dashboard's routes (/api/* and its HTML pages) are not the public API: left out of
		// the document by rule (docs/decisions.md, The dashboard's routes).
		if apptest.DashboardPath(r.Path) {
			continue
		}
		// /mcp is the MCP connector's JSON-RPC endpoint, not a REST operation: left out by rule
		// too (docs/decisions.md, The MCP connector); docs/mcp.md describes it.
		if r.Path == mcpserver.Path {
			continue
		}
		registered[r.Method+" "+r.Path] = true
	}
	require.Equal(t, keys(documented), keys(registered))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Equal(t, "1.0.0", doc.Info.Version)

	r := h.DoKey("", "GET", "/v1/openapi.json", nil, nil)
	require.Equal(t, 200, r.Status, "served without auth")
	require.Equal(t, "3.1.0", r.JSON(t)["openapi"])
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// An operation marked deprecated in the document answers with `Deprecation: true` (the spec's
// words) and Sunset.
func TestDeprecationMechanism(t *testing.T) {
	t.Parallel()
	doc, err := api.Spec()
	require.NoError(t, err)
	clone := *doc
	clone.Paths = openapi3.NewPaths()
	for k, v := range doc.Paths.Map() {
		clone.Paths.Set(k, v)
	}
	me := *clone.Paths.Value("/v1/me")
	op := *me.Get
	op.Deprecated = true
	op.Extensions = map[string]any{"x-deprecated-at": "2026-06-01", "x-sunset": "2027-01-01T00:00:00Z"}
	me.Get = &op
	clone.Paths.Set("/v1/me", &me)
	deps, err := api.Deprecations(&clone)
	require.NoError(t, err)
	d, ok := deps["GET /v1/me"]
	require.True(t, ok)
	require.Equal(t, "2026-06-01", d.Since.Format(time.DateOnly))

	srv := server.New(server.Config{Deprecated: deps})
	srv.Echo.GET("/v1/me", func(c *echo.Context) error { return c.NoContent(http.StatusNoContent) })
	rec := httptest.NewRecorder()
	srv.Echo.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/me", nil))
	require.Equal(t, "true", rec.Header().Get("Deprecation"))
	require.Equal(t, "Fri, 01 Jan 2027 00:00:00 GMT", rec.Header().Get("Sunset"))

	// The served document deprecates nothing today.
	live, err := api.Deprecations(doc)
	require.NoError(t, err)
	require.Empty(t, live)

	// A sunset before the deprecation date is refused.
	op.Extensions = map[string]any{"x-deprecated-at": "2027-06-01", "x-sunset": "2027-01-01"}
	_, err = api.Deprecations(&clone)
	require.Error(t, err)
}

func TestErrorContract(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	r := h.Do("GET", "/v1/does-not-exist", nil)
	require.Equal(t, 404, r.Status)
	require.Equal(t, "not_found", r.ErrorCode(t))
	m := r.JSON(t)
	require.Equal(t, 404.0, m["status"])
	require.Equal(t, "Not Found", m["title"])
	require.Equal(t, "urn:herald:problem:not_found", m["type"])
	require.Equal(t, r.ErrorMessage(t), m["detail"])
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))

	r = h.DoKey("", "GET", "/v1/me", nil, http.Header{"Accept": {"application/problem+json, application/json;q=0.5"}})
	require.Equal(t, 401, r.Status)
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))
	r = h.DoKey("", "GET", "/v1/me", nil, http.Header{"Accept": {"application/json, application/problem+json;q=0.1"}})
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))

	r = h.DoKey("", "GET", "/healthz", nil, nil)
	require.Equal(t, 200, r.Status)
	r = h.DoKey("", "GET", "/readyz", nil, nil)
	require.Equal(t, 200, r.Status)
	h.App.Server.SetReady(false)
	r = h.DoKey("", "GET", "/readyz", nil, nil)
	require.Equal(t, 503, r.Status)
	require.Equal(t, "internal_error", r.ErrorCode(t), "only the spec's codes are sent")
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	require.Contains(t, r.ErrorMessage(t), "starting or shutting down")
	h.App.Server.SetReady(true)
}
