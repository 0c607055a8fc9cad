package apptest

import (
	"net/url"

	"github.com/stretchr/testify/require"
)

// Member has the user invite email to their team with role (and workspaces, when given) through
// the dashboard, and the invitee join in a new browser: that browser, signed in as the member,
// whose password is PasswordOf(email).
func (h *Herald) Member(email, role string, workspaces ...string) *Browser {
	h.T.Helper()
	owner := h.SignedIn()
	body := map[string]any{"email": email, "role": role}
	if workspaces != nil {
		body["workspaces"] = workspaces
	}
	r := owner.Send("POST", "/api/members/invitations", body, owner.CSRFHeader())
	require.Equal(h.T, 201, r.Status, string(r.Body))
	link, err := url.Parse(r.JSON(h.T)["url"].(string))
	require.NoError(h.T, err)
	br := h.NewBrowser()
	r = br.Send("POST", link.Path, url.Values{"name": {email}, "password": {PasswordOf(email)}}, nil)
	require.Equal(h.T, 303, r.Status, string(r.Body))
	r = br.Send("GET", "/api/session", nil, nil)
	require.Equal(h.T, 200, r.Status, string(r.Body))
	br.CSRF = r.JSON(h.T)["csrf_token"].(string)
	return br
}
