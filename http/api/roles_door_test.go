package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/http/auth"
)

var routeParam = regexp.MustCompile(`:[A-Za-z]+`)

// Through the real door, every /api route × every role: a member below the route's least role
// gets 403 forbidden naming the role it needs, before anything is read or changed; a member at or
// above it gets the route's own answer (here mostly a 400 or 404, the ids being unknown and the
// bodies empty). The sign-in and profile routes are every member's and take no role.
func TestRolesOnTheDashboardDoor(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	members := map[string]*apptest.Browser{}
	for _, role := range auth.Roles {
		members[role] = member(t, h, role+"@example.com", role)
	}
	own := map[string]bool{"POST /session": true, "GET /session": true, "DELETE /session": true, "PATCH /profile": true, "POST /profile/password": true}
	checked := 0
	for _, r := range h.App.Server.Echo.Router().Routes() {
		if r.Method == echo.RouteNotFound || !strings.HasPrefix(r.Path, api.DashboardPrefix+"/") {
			continue
		}
		path := strings.TrimPrefix(r.Path, api.DashboardPrefix)
		if own[r.Method+" "+path] {
			continue
		}
		need := api.LeastRole(r.Method, path)
		target := routeParam.ReplaceAllStringFunc(r.Path, func(string) string { return uuid.Must(uuid.NewV7()).String() })
		for _, role := range auth.Roles {
			br := members[role]
			var body any
			if r.Method != http.MethodGet {
				body = map[string]any{}
			}
			resp := br.Send(r.Method, target, body, br.CSRFHeader())
			refused := resp.Status == 403 && strings.Contains(string(resp.Body), "role or above in this team")
			if auth.RoleRank(role) < auth.RoleRank(need) {
				require.True(t, refused, "%s %s as %s: %d %s", r.Method, r.Path, role, resp.Status, resp.Body)
				require.Equal(t, "forbidden", resp.ErrorCode(t))
				require.Contains(t, resp.ErrorMessage(t), "needs the "+need+" role")
			} else {
				require.False(t, refused, "%s %s as %s: %s", r.Method, r.Path, role, resp.Body)
			}
			checked++
		}
	}
	require.Greater(t, checked, 4*50, "the door's routes were all tried")
	for _, br := range members {
		require.Equal(t, 200, br.Send("GET", "/api/session", nil, nil).Status, "every member is still signed in")
	}
}
