package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/live"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
)

// wantRoles is the least role of every operation of the dashboard's door that a role limits,
// written out: viewers read, editors compose and submit, admins delete and manage, owners manage
// members. A route added to either list without an entry here fails the test until its role is
// chosen.
var wantRoles = map[string]string{
	"GET /workspaces": "viewer", "POST /workspaces": "admin", "GET /workspaces/:id": "viewer", "PATCH /workspaces/:id": "admin",
	"DELETE /workspaces/:id": "admin", "GET /workspaces/:id/usage": "viewer",
	"POST /workspaces/:id/connect-links": "admin", "GET /workspaces/:id/connect-links": "viewer",
	"DELETE /workspaces/:id/connect-links/:linkId": "admin",
	"POST /posts/:id/approve":                      "admin", "POST /posts/:id/reject": "admin", "POST /posts/:id/approval-link": "admin",
	"POST /session/workspace": "viewer",
	"GET /queue":              "viewer", "PUT /queue": "admin", "POST /posts/:id/queue": "editor",
	"GET /me": "viewer", "GET /accounts": "viewer", "POST /accounts/connect": "admin", "DELETE /accounts/:id": "admin",
	"PATCH /accounts/:id": "admin", "POST /posts": "editor", "GET /posts": "viewer", "GET /posts/:id": "viewer",
	"GET /posts/:id/events": "viewer", "PATCH /posts/:id": "editor", "DELETE /posts/:id": "admin",
	"POST /posts/publish": "editor", "POST /posts/:id/publish": "editor", "POST /posts/schedule": "editor",
	"POST /posts/validate": "editor", "POST /posts/:id/schedule": "editor", "GET /jobs/:trackingId": "viewer",
	"GET /jobs/:trackingId/stream": "viewer", "POST /campaigns": "editor", "GET /campaigns": "viewer",
	"GET /campaigns/:id": "viewer", "GET /campaigns/:id/stream": "viewer", "POST /campaigns/:id/retry": "editor",
	"DELETE /campaigns/:id": "admin", "POST /media/presign": "editor", "POST /media/confirm": "editor",
	"GET /media/:id": "viewer", "PATCH /media/:id": "editor", "GET /webhooks": "viewer", "POST /webhooks": "admin",
	"PATCH /webhooks/:id": "admin", "DELETE /webhooks/:id": "admin", "GET /webhooks/:id/deliveries": "viewer",
	"POST /webhooks/:id/rotate-secret": "admin", "POST /webhooks/:id/test": "admin",
	"GET /webhooks/:id/deliveries/:deliveryId": "viewer", "POST /webhooks/:id/deliveries/:deliveryId/redeliver": "admin", "GET /accounts/:id/capabilities": "viewer",
	"GET /analytics/overview": "viewer", "GET /analytics/accounts": "viewer", "GET /analytics/posts/:postId": "viewer",
	"GET /inbox/accounts": "viewer", "GET /inbox/comments": "viewer", "POST /inbox/comments/:commentId/reply": "editor",
	"POST /inbox/comments/:commentId/like": "editor", "POST /inbox/comments/:commentId/hide": "editor",
	"GET /inbox/dms": "viewer", "GET /inbox/dms/:conversationId": "viewer", "POST /inbox/dms/:conversationId/reply": "editor",
	// The dashboard's own.
	"GET /keys": "admin", "POST /keys": "admin", "PATCH /keys/:id": "admin", "POST /keys/:id/regenerate": "admin",
	"DELETE /keys/:id": "admin", "POST /accounts/x": "admin", "POST /accounts/bluesky": "admin",
	"GET /members": "owner", "POST /members/invitations": "owner", "DELETE /members/invitations/:id": "owner",
	"PATCH /members/:id": "owner", "DELETE /members/:id": "owner",
}

// dashboardOwn are the routes the dashboard's group adds besides the operations of both doors.
var dashboardOwn = []string{"POST /session/workspace", "GET /keys", "POST /keys", "PATCH /keys/:id", "POST /keys/:id/regenerate", "DELETE /keys/:id",
	"POST /accounts/x", "POST /accounts/bluesky", "GET /members", "POST /members/invitations",
	"DELETE /members/invitations/:id", "PATCH /members/:id", "DELETE /members/:id"}

// The role table: every route × every role. A member passes exactly when their role is at least
// the route's; the team's owner and API keys, who have no role, pass everywhere; approving is an
// admin's or an owner's.
func TestRoleTable(t *testing.T) {
	t.Parallel()
	h := &handlers{Deps: Deps{Media: &blob.Service{}, Webhooks: &webhook.Service{}, Live: &live.Service{}}}
	ops := append([]string(nil), dashboardOwn...)
	for _, r := range h.routes() {
		ops = append(ops, r.method+" "+r.path)
	}
	require.Len(t, wantRoles, len(ops), "every route has its role written out")
	for k := range leastRoles {
		require.Contains(t, ops, k, "the role table names a route that exists")
	}
	owner := &persistence.User{ID: "owner"}
	for _, op := range ops {
		want, ok := wantRoles[op]
		require.True(t, ok, "%s has no role written out", op)
		method, path, _ := strings.Cut(op, " ")
		require.Equal(t, want, leastRole(method, path), op)
		for _, role := range auth.Roles {
			p := auth.MemberOf(owner, &persistence.User{ID: "m"}, &persistence.Member{Role: role})
			require.Equal(t, auth.RoleRank(role) >= auth.RoleRank(want), p.HasRole(leastRole(method, path)), "%s as %s", op, role)
		}
		require.True(t, (&auth.Principal{User: owner}).HasRole(leastRole(method, path)), "the owner passes %s", op)
		require.True(t, (&auth.Principal{User: owner, Key: &persistence.APIKey{}}).HasRole(leastRole(method, path)), "a key passes %s", op)
	}
	require.Equal(t, "admin", leastRole("POST", "/a/route/without/an/entry"), "a write without an entry is an admin's")
	require.Equal(t, "viewer", leastRole("GET", "/a/route/without/an/entry"))

	for role, can := range map[string]bool{"viewer": false, "editor": false, "admin": true, "owner": true} {
		p := auth.MemberOf(owner, &persistence.User{ID: "m"}, &persistence.Member{Role: role})
		require.Equal(t, can, p.CanApprove(), role)
	}
	require.True(t, (&auth.Principal{User: owner}).CanApprove(), "the team's owner approves")
}
