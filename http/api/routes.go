package api

import (
	"strings"

	"github.com/labstack/echo/v5"
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

// route is one operation: a method, a path below the door's prefix, and its handler.
type route struct {
	method, path string
	handler      echo.HandlerFunc
}

// routes is every operation both doors serve. Routes outside the doors (the OpenAPI document,
// the media upload and file URLs, the connect flow's browser routes, the sign-in routes) are
// registered on their own.
func (h *handlers) routes() []route {
	rs := []route{
		{"GET", "/me", h.me},
		{"GET", "/accounts", h.listAccounts},
		{"POST", "/accounts/connect", h.connectAccount},
		{"DELETE", "/accounts/:id", h.deleteAccount},
		{"POST", "/posts", h.createPost},
		{"GET", "/posts", h.listPosts},
		{"GET", "/posts/:id", h.getPost},
		{"GET", "/posts/:id/events", h.postEvents},
		{"PATCH", "/posts/:id", h.updatePost},
		{"DELETE", "/posts/:id", h.deletePost},
		{"POST", "/posts/publish", h.publishNew},
		{"POST", "/posts/:id/publish", h.publishExisting},
		{"POST", "/posts/schedule", h.scheduleNew},
		{"POST", "/posts/:id/schedule", h.scheduleExisting},
		{"GET", "/jobs/:trackingId", h.getJob},
		{"GET", jobStreamPath, h.stream},
	}
	if h.Media != nil {
		rs = append(rs,
			route{"POST", "/media/presign", h.presignMedia},
			route{"POST", "/media/confirm", h.confirmMedia},
			route{"GET", "/media/:id", h.getMedia},
		)
	}
	if h.Webhooks != nil {
		rs = append(rs,
			route{"GET", "/webhooks", h.listWebhooks},
			route{"POST", "/webhooks", h.createWebhook},
			route{"PATCH", "/webhooks/:id", h.updateWebhook},
			route{"DELETE", "/webhooks/:id", h.deleteWebhook},
			route{"GET", "/webhooks/:id/deliveries", h.listDeliveries},
			route{"POST", "/webhooks/:id/rotate-secret", h.rotateWebhookSecret},
		)
	}
	if h.Live != nil {
		rs = append(rs,
			route{"GET", "/analytics/overview", h.analyticsOverview},
			route{"GET", "/analytics/accounts", h.analyticsAccounts},
			route{"GET", "/analytics/posts/:postId", h.analyticsPost},
			route{"GET", "/inbox/accounts", h.inboxAccounts},
			route{"GET", "/inbox/comments", h.inboxComments},
			route{"POST", "/inbox/comments/:commentId/reply", h.replyToComment},
			route{"POST", "/inbox/comments/:commentId/like", h.likeComment},
			route{"POST", "/inbox/comments/:commentId/hide", h.hideComment},
			route{"GET", "/inbox/dms", h.inboxDMs},
			route{"GET", "/inbox/dms/:conversationId", h.inboxDMThread},
			route{"POST", "/inbox/dms/:conversationId/reply", h.replyToConversation},
		)
	}
	return rs
}

// mount adds every route to a door's group.
func mount(g *echo.Group, rs []route) {
	for _, r := range rs {
		g.Add(r.method, r.path, r.handler)
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
