package api_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/persistence"
)

var joinLink = regexp.MustCompile(`/join/hmi_[0-9A-Za-z]{40}$`)

// invite has the owner's browser invite email with role (and workspaces, when given) and returns
// the link's path.
func invite(t *testing.T, owner *apptest.Browser, email, role string, workspaces ...string) string {
	t.Helper()
	body := map[string]any{"email": email, "role": role}
	if workspaces != nil {
		body["workspaces"] = workspaces
	}
	r := owner.Send("POST", "/api/members/invitations", body, owner.CSRFHeader())
	require.Equal(t, 201, r.Status, string(r.Body))
	link := r.JSON(t)["url"].(string)
	require.Regexp(t, joinLink, link)
	u, err := url.Parse(link)
	require.NoError(t, err)
	return u.Path
}

// join accepts an invitation in a new browser and returns it signed in as the member.
func join(t *testing.T, h *apptest.Herald, path, name string) *apptest.Browser {
	t.Helper()
	br := h.NewBrowser()
	r := br.Send("POST", path, url.Values{"name": {name}, "password": {"password of " + name}}, nil)
	require.Equal(t, 303, r.Status, string(r.Body))
	require.Equal(t, "/", r.Header.Get("Location"))
	r = br.Send("GET", "/api/session", nil, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	br.CSRF = r.JSON(t)["csrf_token"].(string)
	return br
}

// member has the owner invite email with role and the invitee join: the member's browser.
func member(t *testing.T, h *apptest.Herald, email, role string, workspaces ...string) *apptest.Browser {
	t.Helper()
	return join(t, h, invite(t, h.SignedIn(), email, role, workspaces...), email)
}

func countMembers(t *testing.T, h *apptest.Herald) int {
	t.Helper()
	n := 0
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		ms, err := tx.MembersOf(h.User.ID)
		n = len(ms)
		return err
	}))
	return n
}

// An invitation: the link is shown once to the owner, its page says who invites whom to what and
// needs no session, joining creates the member and signs them in; the link then works no more
// (a second use creates nothing), and an expired or revoked link, or one whose e-mail has since
// become a Herald user, gets a page that says so and creates nothing.
func TestMemberInvitation(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	owner := h.SignedIn()
	path := invite(t, owner, "Ed@Example.com", "editor")

	r := owner.Send("GET", "/api/members", nil, nil)
	require.Equal(t, 200, r.Status)
	body := r.JSON(t)
	require.Empty(t, body["data"])
	invs := body["invitations"].([]any)
	require.Len(t, invs, 1)
	require.Equal(t, "ed@example.com", invs[0].(map[string]any)["email"])
	require.NotContains(t, invs[0], "url", "the link is shown once, in the answer that made it")
	require.NotContains(t, string(r.Body), strings.TrimPrefix(path, "/join/"))

	guest := h.NewBrowser()
	r = guest.Send("GET", path, nil, nil)
	require.Equal(t, 200, r.Status)
	apptest.RequireSecurityHeaders(t, r)
	page := string(r.Body)
	require.Contains(t, page, h.User.Email)
	require.Contains(t, page, "ed@example.com")
	require.Contains(t, page, "editor")
	require.Contains(t, page, `<form method="post" action="`+path+`">`)
	require.NotContains(t, page, "<script")

	r = guest.Send("POST", path, url.Values{"name": {"Ed"}, "password": {"short"}}, nil)
	require.Equal(t, 400, r.Status)
	require.Contains(t, string(r.Body), "at least 10 characters")
	r = guest.Send("POST", path, url.Values{"name": {"Ed"}, "password": {"long enough password"}}, http.Header{"Origin": {"https://evil.example"}})
	require.Equal(t, 403, r.Status, "a cross-site post is refused")
	require.Equal(t, 0, countMembers(t, h), "nothing was created by a refused form")

	ed := join(t, h, path, "ed@example.com")
	r = ed.Send("GET", "/api/session", nil, nil)
	require.Equal(t, "ed@example.com", r.JSON(t)["user"].(map[string]any)["email"])
	require.Equal(t, 1, countMembers(t, h))
	r = owner.Send("GET", "/api/members", nil, nil)
	body = r.JSON(t)
	require.Empty(t, body["invitations"], "a used invitation is no longer pending")
	m := body["data"].([]any)[0].(map[string]any)
	require.Equal(t, "editor", m["role"])
	require.Equal(t, "ed@example.com", m["name"])

	// A member invitation reused: a page saying so, nothing created, the member unchanged.
	for _, br := range []*apptest.Browser{h.NewBrowser(), ed} {
		r = br.Send("GET", path, nil, nil)
		require.Equal(t, 410, r.Status)
		require.Contains(t, string(r.Body), "already used")
		require.NotContains(t, string(r.Body), "<form")
		r = br.Send("POST", path, url.Values{"name": {"Mallory"}, "password": {"mallory's password"}}, nil)
		require.Equal(t, 410, r.Status)
		require.Contains(t, string(r.Body), "already used")
	}
	require.Equal(t, 1, countMembers(t, h))
	require.Equal(t, 401, h.NewBrowser().SignIn("ed@example.com", "mallory's password").Status)
	require.Equal(t, 200, h.NewBrowser().SignIn("ed@example.com", "password of ed@example.com").Status)

	// Revoked: the link is refused from then on.
	path = invite(t, owner, "rev@example.com", "viewer")
	id := owner.Send("GET", "/api/members", nil, nil).JSON(t)["invitations"].([]any)[0].(map[string]any)["id"].(string)
	other, _ := h.NewUser("other@example.com", "pro")
	ob := h.NewBrowser()
	require.Equal(t, 200, ob.SignIn(other.Email, apptest.PasswordOf(other.Email)).Status)
	r = ob.Send("DELETE", "/api/members/invitations/"+id, nil, ob.CSRFHeader())
	require.Equal(t, 404, r.Status, "another owner cannot revoke it")
	r = owner.Send("DELETE", "/api/members/invitations/"+id, nil, owner.CSRFHeader())
	require.Equal(t, 204, r.Status)
	r = h.NewBrowser().Send("POST", path, url.Values{"name": {"Rev"}, "password": {"long enough password"}}, nil)
	require.Equal(t, 410, r.Status)
	require.Contains(t, string(r.Body), "revoked")
	r = owner.Send("DELETE", "/api/members/invitations/"+id, nil, owner.CSRFHeader())
	require.Equal(t, 404, r.Status, "a revoked invitation is no longer pending")

	// Expired: written as the owner's invitation would be, a week and a second ago.
	token, hash := auth.GenerateToken("hmi_")
	past := time.Now().UTC().Add(-8 * 24 * time.Hour)
	require.NoError(t, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		return tx.PutInvitation(&persistence.Invitation{ID: uuid.Must(uuid.NewV7()).String(), OwnerID: h.User.ID, InvitedBy: h.User.ID,
			Email: "late@example.com", Role: "viewer", CreatedAt: past, ExpiresAt: time.Now().Add(-time.Second)}, hash)
	}))
	r = h.NewBrowser().Send("POST", "/join/"+token, url.Values{"name": {"Late"}, "password": {"long enough password"}}, nil)
	require.Equal(t, 410, r.Status)
	require.Contains(t, string(r.Body), "expired")

	// An e-mail that is a Herald user: refused when inviting, and on the page when it became one
	// after the invitation.
	r = owner.Send("POST", "/api/members/invitations", map[string]any{"email": "other@example.com", "role": "viewer"}, owner.CSRFHeader())
	require.Equal(t, 400, r.Status)
	require.Equal(t, "validation_error", r.ErrorCode(t))
	path = invite(t, owner, "later@example.com", "viewer")
	h.NewUser("later@example.com", "free")
	r = h.NewBrowser().Send("POST", path, url.Values{"name": {"Later"}, "password": {"long enough password"}}, nil)
	require.Equal(t, 409, r.Status)
	require.Contains(t, string(r.Body), "already has a Herald user")

	// Unknown and malformed links.
	for _, p := range []string{"/join/hmi_" + strings.Repeat("A", 40), "/join/nope", "/join/" + strings.Repeat("x", 500)} {
		r = h.NewBrowser().Send("GET", p, nil, nil)
		require.Equal(t, 404, r.Status, p)
		require.Contains(t, string(r.Body), "not valid")
	}
	require.Equal(t, 1, countMembers(t, h))

	// Bad input to invite, each a validation_error that creates nothing.
	for _, b := range []map[string]any{
		{"email": "not an address", "role": "viewer"},
		{"email": "x@example.com", "role": "superuser"},
		{"email": "x@example.com"},
		{"email": "x@example.com", "role": "viewer", "workspaces": []string{uuid.Must(uuid.NewV7()).String()}},
		{"email": "x@example.com", "role": "viewer", "workspaces": "main"},
		{"email": "x@example.com", "role": "viewer", "workspaces": []string{"main", "main"}},
	} {
		r = owner.Send("POST", "/api/members/invitations", b, owner.CSRFHeader())
		require.Equal(t, 400, r.Status, "%v: %s", b, r.Body)
		require.Equal(t, "validation_error", r.ErrorCode(t))
	}
	require.Len(t, owner.Send("GET", "/api/members", nil, nil).JSON(t)["invitations"], 1)
}

// A member's requests act in the owner's data: the owner's accounts, the posts the member makes
// are the owner's, and the owner sees them through /v1 with the owner's key. The member's own
// profile is theirs.
func TestMemberActsInTheOwnersData(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	ed := member(t, h, "ed@example.com", "editor")

	r := ed.Send("GET", "/api/accounts", nil, nil)
	require.Equal(t, 200, r.Status)
	require.Len(t, r.JSON(t)["data"], len(h.Accounts))
	r = ed.Send("POST", "/api/posts", map[string]any{"content": "by the editor", "platforms": []string{h.Accounts[0].ID}}, ed.CSRFHeader())
	require.Equal(t, 201, r.Status, string(r.Body))
	id := r.JSON(t)["id"].(string)
	r = h.Do("GET", "/v1/posts/"+id, nil)
	require.Equal(t, 200, r.Status, "the owner's key reads the member's post")
	require.Equal(t, "by the editor", r.JSON(t)["content"])
	r = ed.Send("GET", "/api/me", nil, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, h.User.Email, r.JSON(t)["email"], "/api/me is the team's: the owner's plan")

	r = ed.Send("PATCH", "/api/profile", map[string]any{"name": "Ed Itor"}, ed.CSRFHeader())
	require.Equal(t, 200, r.Status, string(r.Body))
	require.Equal(t, "ed@example.com", r.JSON(t)["email"], "a member edits their own profile")
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		u, err := tx.User(h.User.ID)
		require.NoError(t, err)
		require.True(t, u.Name == nil || *u.Name != "Ed Itor", "the owner's profile is untouched")
		return err
	}))

	// An editor cannot delete (an admin's), and gets a message naming the role needed.
	r = ed.Send("DELETE", "/api/posts/"+id, nil, ed.CSRFHeader())
	require.Equal(t, 403, r.Status)
	require.Equal(t, "forbidden", r.ErrorCode(t))
	require.Contains(t, r.ErrorMessage(t), "admin")
	require.Equal(t, 200, h.Do("GET", "/v1/posts/"+id, nil).Status, "the post is still there")
	require.Equal(t, 204, h.SignedIn().Send("DELETE", "/api/posts/"+id, nil, h.SignedIn().CSRFHeader()).Status, "the owner can")
}

// A member limited to workspace A opens A (their default, main not being theirs) and nothing
// else: B and main are 403 forbidden whether the header or the session's choice names them; the
// pages refuse as well. The owner's choice of limits can be changed, and takes effect at once.
func TestMemberLimitedToAWorkspace(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	a, b := putWorkspace(t, h, h.User.ID, "Client A").ID, putWorkspace(t, h, h.User.ID, "Client B").ID
	path := invite(t, h.SignedIn(), "ana@example.com", "editor", a)
	r := h.NewBrowser().Send("GET", path, nil, nil)
	require.Contains(t, string(r.Body), "the workspace Client A")
	ana := join(t, h, path, "ana@example.com")
	name := "acct-a"
	acct := &persistence.Account{ID: uuid.Must(uuid.NewV7()).String(), UserID: h.User.ID, WorkspaceID: a, Platform: "linkedin",
		Username: &name, IsActive: true, CreatedAt: time.Now().UTC()}
	require.NoError(t, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error { return tx.PutAccount(acct) }))

	r = ana.Send("POST", "/api/posts", map[string]any{"content": "for A", "platforms": []string{acct.ID}}, ana.CSRFHeader())
	require.Equal(t, 201, r.Status, string(r.Body))
	id := r.JSON(t)["id"].(string)
	require.NoError(t, h.App.Store.View(func(tx *persistence.Tx) error {
		p, err := tx.Post(id)
		require.NoError(t, err)
		require.Equal(t, a, p.WorkspaceID, "the member's default is their first workspace")
		return err
	}))
	for _, ws := range []string{b, persistence.MainWorkspace, h.User.ID} {
		r = ana.Send("GET", "/api/posts", nil, http.Header{"Herald-Workspace": {ws}})
		require.Equal(t, 403, r.Status, ws)
		require.Equal(t, "forbidden", r.ErrorCode(t))
	}
	r = ana.Send("GET", "/api/posts", nil, http.Header{"Herald-Workspace": {a}})
	require.Equal(t, 200, r.Status)
	require.Len(t, r.JSON(t)["data"], 1)

	// The session's choice naming B.
	require.NoError(t, h.App.Store.Update(context.Background(), func(tx *persistence.Tx) error {
		hash := session.HashToken(ana.SessionCookie())
		s, err := tx.Session(hash)
		require.NoError(t, err)
		s.WorkspaceID = b
		return tx.PutSession(hash, s)
	}))
	r = ana.Send("GET", "/api/posts", nil, nil)
	require.Equal(t, 403, r.Status)
	r = ana.Send("GET", "/posts", nil, nil)
	require.Equal(t, 403, r.Status, "the dashboard's pages too")

	// Widened to B by the owner: B opens.
	owner := h.SignedIn()
	mid := owner.Send("GET", "/api/members", nil, nil).JSON(t)["data"].([]any)[0].(map[string]any)["id"].(string)
	r = owner.Send("PATCH", "/api/members/"+mid, map[string]any{"workspaces": []string{a, b}}, owner.CSRFHeader())
	require.Equal(t, 200, r.Status, string(r.Body))
	r = ana.Send("GET", "/api/posts", nil, nil)
	require.Equal(t, 200, r.Status)
	require.Empty(t, r.JSON(t)["data"], "B holds none of A's posts")
}

// Removing a member ends their sessions at once (the next request is 401) and they can no longer
// sign in; a role change takes effect at the member's next request. Only the owner manages
// members; a member cannot change or remove themselves.
func TestMemberRemovalEndsSessions(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	owner := h.SignedIn()
	vic := member(t, h, "vic@example.com", "viewer")
	adm := member(t, h, "adm@example.com", "admin")
	require.Equal(t, 200, vic.Send("GET", "/api/posts", nil, nil).Status)
	list := owner.Send("GET", "/api/members", nil, nil).JSON(t)["data"].([]any)
	ids := map[string]string{}
	for _, m := range list {
		ids[m.(map[string]any)["email"].(string)] = m.(map[string]any)["id"].(string)
	}

	r := adm.Send("GET", "/api/members", nil, nil)
	require.Equal(t, 403, r.Status, "an admin does not manage members")
	require.Contains(t, r.ErrorMessage(t), "owner")
	r = adm.Send("DELETE", "/api/members/"+ids["vic@example.com"], nil, adm.CSRFHeader())
	require.Equal(t, 403, r.Status)

	r = vic.Send("POST", "/api/posts", map[string]any{"content": "x"}, vic.CSRFHeader())
	require.Equal(t, 403, r.Status, "a viewer does not compose")
	require.Contains(t, r.ErrorMessage(t), "editor")
	r = owner.Send("PATCH", "/api/members/"+ids["vic@example.com"], map[string]any{"role": "editor"}, owner.CSRFHeader())
	require.Equal(t, 200, r.Status, string(r.Body))
	r = vic.Send("POST", "/api/posts", map[string]any{"content": "x", "platforms": []string{h.Accounts[0].ID}}, vic.CSRFHeader())
	require.Equal(t, 201, r.Status, "the new role holds at the next request: %s", r.Body)

	r = owner.Send("PATCH", "/api/members/"+ids["adm@example.com"], map[string]any{"role": "owner"}, owner.CSRFHeader())
	require.Equal(t, 200, r.Status)
	r = adm.Send("PATCH", "/api/members/"+ids["adm@example.com"], map[string]any{"role": "viewer"}, adm.CSRFHeader())
	require.Equal(t, 403, r.Status, "a member does not change their own role")
	r = adm.Send("DELETE", "/api/members/"+ids["adm@example.com"], nil, adm.CSRFHeader())
	require.Equal(t, 403, r.Status, "nor remove themselves")
	r = adm.Send("PATCH", "/api/members/"+ids["vic@example.com"], map[string]any{"role": "superuser"}, adm.CSRFHeader())
	require.Equal(t, 400, r.Status)

	r = adm.Send("DELETE", "/api/members/"+ids["vic@example.com"], nil, adm.CSRFHeader())
	require.Equal(t, 204, r.Status, "a member with the owner role manages members")
	r = vic.Send("GET", "/api/posts", nil, nil)
	require.Equal(t, 401, r.Status, "the removed member's session ended")
	require.Equal(t, 401, h.NewBrowser().SignIn("vic@example.com", "password of vic@example.com").Status)
	r = owner.Send("DELETE", "/api/members/"+ids["vic@example.com"], nil, owner.CSRFHeader())
	require.Equal(t, 404, r.Status)

	other, _ := h.NewUser("other@example.com", "pro")
	ob := h.NewBrowser()
	require.Equal(t, 200, ob.SignIn(other.Email, apptest.PasswordOf(other.Email)).Status)
	r = ob.Send("DELETE", "/api/members/"+ids["adm@example.com"], nil, ob.CSRFHeader())
	require.Equal(t, 404, r.Status, "another owner's member is not found")
	r = ob.Send("PATCH", "/api/members/"+ids["adm@example.com"], map[string]any{"role": "viewer"}, ob.CSRFHeader())
	require.Equal(t, 404, r.Status)
	require.Equal(t, 200, adm.Send("GET", "/api/members", nil, nil).Status)
}

// The browser connect flow, for members: an admin member connects an account, which lands in the
// owner's data; an editor cannot start one, nor finish one an admin started.
func TestMembersConnectAccounts(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Sandbox: true})
	adm := h.Member("adm@example.com", "admin")
	ed := h.Member("ed@example.com", "editor")

	r := ed.Send("POST", "/api/accounts/connect", map[string]any{"platform": "linkedin"}, ed.CSRFHeader())
	require.Equal(t, 403, r.Status)
	require.Contains(t, r.ErrorMessage(t), "admin")
	r = adm.Send("POST", "/api/accounts/connect", map[string]any{"platform": "linkedin"}, adm.CSRFHeader())
	require.Equal(t, 200, r.Status, string(r.Body))
	authURL := r.JSON(t)["authorization_url"].(string)

	page, _ := h.BrowseWith(ed.Client.Jar, authURL)
	require.Equal(t, 403, page.Status, "an editor's browser cannot finish it")
	require.Contains(t, string(page.Body), "admin role")

	before := len(h.Do("GET", "/v1/accounts", nil).JSON(t)["data"].([]any))
	r = adm.Send("POST", "/api/accounts/connect", map[string]any{"platform": "linkedin"}, adm.CSRFHeader())
	page, _ = h.BrowseWith(adm.Client.Jar, r.JSON(t)["authorization_url"].(string))
	apptest.RequirePage(t, page, 200, "is now connected")
	require.Len(t, h.Do("GET", "/v1/accounts", nil).JSON(t)["data"], before+1, "the account is the owner's")
}

// Concurrent posts of one invitation create one member: the transaction that writes checks the
// invitation again.
func TestMemberInvitationRacedOnce(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	path := invite(t, h.SignedIn(), "race@example.com", "viewer")
	const n = 6
	statuses := make(chan int, n)
	for i := range n {
		go func() {
			br := h.NewBrowser()
			r := br.Send("POST", path, url.Values{"name": {"Racer"}, "password": {"racer's password " + strings.Repeat("x", i)}}, nil)
			statuses <- r.Status
		}()
	}
	joined := 0
	for range n {
		s := <-statuses
		require.Contains(t, []int{303, 410}, s)
		if s == 303 {
			joined++
		}
	}
	require.Equal(t, 1, joined)
	require.Equal(t, 1, countMembers(t, h))
}
