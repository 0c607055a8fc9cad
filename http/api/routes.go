package api

import (
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
)

// The two doors (DESIGN.md, People and programs): programs call /v1 with an API key, people in
// the dashboard call /api on a session cookie with a CSRF token. Both serve one list of
// operations (routes below), declared once and mounted on each door's group, so that the same
// handler answers the same request whichever door it came through. What differs is only the
// door's middleware:
//
//	/v1   Server.Authenticated: an API key, then the plan's hourly quota (RateLimit-* headers)
//	/api  Server.SecurityHeaders + Server.SessionAuth: a session cookie, and the CSRF token on
//	      every request but GET, HEAD and OPTIONS; no hourly quota (docs/dashboard.md)
//
// Body caps and per-request deadlines are the server's own middleware and apply to both.
const (
	V1Prefix        = "/v1"
	DashboardPrefix = "/api"
)

// jobStreamPath is the SSE operation, exempt from the per-request deadlines on both doors.
const jobStreamPath = "/jobs/:trackingId/stream"

// JobStreamRoute and DashboardJobStreamRoute are the SSE route on each door (server.Config's
// LongRunning).
const (
	JobStreamRoute          = V1Prefix + jobStreamPath
	DashboardJobStreamRoute = DashboardPrefix + jobStreamPath
)

// route is one operation: a method, a path below the door's prefix, its handler, and the OAuth
// scope it needs on /v1 besides the umbrella of its class (service:read for GET, service:write
// for the others; "" when only the umbrella covers it: analytics and the inbox). API keys and
// dashboard sessions carry no scopes and pass; the OpenAPI document declares the same scopes per
// operation (a test compares the two).
type route struct {
	method, path string
	handler      echo.HandlerFunc
	scope        string
}

// Write reports whether the route is in the write class (service:write).
func (r route) write() bool { return r.method != "GET" && r.method != "HEAD" }

// Scopes are the scopes that open the route: its own, if any, and its class's umbrella.
func (r route) scopes() []string {
	u := auth.ScopeServiceRead
	if r.write() {
		u = auth.ScopeServiceWrite
	}
	if r.scope == "" {
		return []string{u}
	}
	return []string{r.scope, u}
}

// routes is every operation both doors serve. Routes outside the doors (the OpenAPI document,
// the media upload and file URLs, the connect flow's browser routes, the sign-in routes) are
// registered on their own.
func (h *handlers) routes() []route {
	rs := []route{
		{"GET", "/me", h.me, auth.ScopeMeRead},
		{"GET", "/accounts", h.listAccounts, auth.ScopeAccountsRead},
		{"POST", "/accounts/connect", h.connectAccount, auth.ScopeAccountsWrite},
		{"DELETE", "/accounts/:id", h.deleteAccount, auth.ScopeAccountsWrite},
		{"PATCH", "/accounts/:id", h.updateAccount, auth.ScopeAccountsWrite},
		{"POST", "/posts", h.createPost, auth.ScopePostsWrite},
		{"GET", "/posts", h.listPosts, auth.ScopePostsRead},
		{"GET", "/posts/:id", h.getPost, auth.ScopePostsRead},
		{"GET", "/posts/:id/events", h.postEvents, auth.ScopePostsRead},
		{"PATCH", "/posts/:id", h.updatePost, auth.ScopePostsWrite},
		{"DELETE", "/posts/:id", h.deletePost, auth.ScopePostsWrite},
		{"POST", "/posts/publish", h.publishNew, auth.ScopePostsWrite},
		{"POST", "/posts/:id/publish", h.publishExisting, auth.ScopePostsWrite},
		{"POST", "/posts/schedule", h.scheduleNew, auth.ScopePostsWrite},
		{"POST", "/posts/validate", h.validatePost, auth.ScopePostsRead},
		{"POST", "/posts/:id/schedule", h.scheduleExisting, auth.ScopePostsWrite},
		{"POST", "/posts/:id/approve", h.approvePost, auth.ScopePostsWrite},
		{"POST", "/posts/:id/reject", h.rejectPost, auth.ScopePostsWrite},
		{"POST", "/posts/:id/approval-link", h.approvalLink, auth.ScopePostsWrite},
		{"GET", "/jobs/:trackingId", h.getJob, auth.ScopeJobsRead},
		{"GET", jobStreamPath, h.stream, auth.ScopeJobsRead},
		{"POST", campaignsPath, h.createCampaign, auth.ScopePostsWrite},
		{"GET", campaignsPath, h.listCampaigns, auth.ScopePostsRead},
		{"GET", campaignsPath + "/:id", h.getCampaign, auth.ScopePostsRead},
		{"GET", campaignStreamPath, h.campaignStream, auth.ScopePostsRead},
		{"POST", campaignsPath + "/:id/retry", h.retryCampaign, auth.ScopePostsWrite},
		{"DELETE", campaignsPath + "/:id", h.deleteCampaign, auth.ScopePostsWrite},
	}
	rs = append(rs, h.workspaceRoutes()...)
	rs = append(rs, h.queueRoutes()...)
	rs = append(rs, h.connectLinkRoutes()...)
	if h.Media != nil {
		rs = append(rs,
			route{"POST", "/media/presign", h.presignMedia, auth.ScopeMediaWrite},
			route{"POST", "/media/confirm", h.confirmMedia, auth.ScopeMediaWrite},
			route{"GET", "/media/:id", h.getMedia, auth.ScopeMediaWrite},
			route{"PATCH", "/media/:id", h.updateMedia, auth.ScopeMediaWrite},
		)
	}
	if h.Webhooks != nil {
		rs = append(rs,
			route{"GET", "/webhooks", h.listWebhooks, auth.ScopeWebhooksRead},
			route{"POST", "/webhooks", h.createWebhook, auth.ScopeWebhooksWrite},
			route{"PATCH", "/webhooks/:id", h.updateWebhook, auth.ScopeWebhooksWrite},
			route{"DELETE", "/webhooks/:id", h.deleteWebhook, auth.ScopeWebhooksWrite},
			route{"GET", "/webhooks/:id/deliveries", h.listDeliveries, auth.ScopeWebhooksRead},
			route{"POST", "/webhooks/:id/rotate-secret", h.rotateWebhookSecret, auth.ScopeWebhooksWrite},
			route{"POST", "/webhooks/:id/test", h.sendTestEvent, auth.ScopeWebhooksWrite},
			route{"GET", "/webhooks/:id/deliveries/:deliveryId", h.getDelivery, auth.ScopeWebhooksRead},
			route{"POST", "/webhooks/:id/deliveries/:deliveryId/redeliver", h.redeliver, auth.ScopeWebhooksWrite},
		)
	}
	if h.Live != nil {
		rs = append(rs,
			route{"GET", "/accounts/:id/capabilities", h.getCapabilities, auth.ScopeAccountsRead},
			route{"GET", "/analytics/overview", h.analyticsOverview, ""},
			route{"GET", "/analytics/accounts", h.analyticsAccounts, ""},
			route{"GET", "/analytics/posts/:postId", h.analyticsPost, ""},
			route{"GET", "/inbox/accounts", h.inboxAccounts, ""},
			route{"GET", "/inbox/comments", h.inboxComments, ""},
			route{"POST", "/inbox/comments/:commentId/reply", h.replyToComment, ""},
			route{"POST", "/inbox/comments/:commentId/like", h.likeComment, ""},
			route{"POST", "/inbox/comments/:commentId/hide", h.hideComment, ""},
			route{"GET", "/inbox/dms", h.inboxDMs, ""},
			route{"GET", "/inbox/dms/:conversationId", h.inboxDMThread, ""},
			route{"POST", "/inbox/dms/:conversationId/reply", h.replyToConversation, ""},
		)
	}
	return rs
}

// admitted reports whether the route takes a write slot (server.AdmitWrite): every write but
// the inbox's actions, which call a network rather than write the store and are bounded by the
// account's read budgets and the live deadline instead. Reads and the job stream take none.
func (r route) admitted() bool { return r.write() && !strings.HasPrefix(r.path, "/inbox/") }

// mount adds every route to a door's group; scoped, each route checks its scope
// (server.RequireScope) after the door's authentication. Writes then take a write slot.
func mount(g *echo.Group, s *server.Server, rs []route, scoped bool) {
	for _, r := range rs {
		var mw []echo.MiddlewareFunc
		if scoped {
			mw = append(mw, server.RequireScope(r.scope, r.write()))
		}
		if r.admitted() {
			mw = append(mw, s.AdmitWrite)
		}
		g.Add(r.method, r.path, r.handler, mw...)
	}
}

// door is the prefix of the door a request came through (V1Prefix or DashboardPrefix), read from
// its route template: links a handler answers (stream_url, Location) point back through it.
func door(c *echo.Context) string {
	if strings.HasPrefix(c.Path(), DashboardPrefix+"/") {
		return DashboardPrefix
	}
	return V1Prefix
}
