package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/persistence"
)

// A team's members (persistence/members.go), on the dashboard's door only: keys have no person
// behind them. The owner (or a member with the owner role) manages them:
//
//	GET    /api/members                   → 200 {data: [member], invitations: [invitation]} (pending ones)
//	POST   /api/members/invitations       {email, role, workspaces?} → 201 invitation with its url, shown once
//	DELETE /api/members/invitations/:id   → 204; the link is refused from then on
//	PATCH  /api/members/:id               {role?, workspaces?} → 200 member
//	DELETE /api/members/:id               → 204; the member's user is removed and their sessions end at once
//
// Herald sends no mail: the inviter passes the link on. The link opens JoinPath, a page that
// needs no session: it says who invites whom to what, asks for a name and a password, creates the
// member's user and signs them in. Only the SHA-256 of its token is stored; it is single use and
// expires after InvitationTTL. An e-mail that already has a Herald user cannot join (a user
// belongs to one team, and an owner's data is never folded into another's).

// JoinPath is the invitation page; the token follows it.
const JoinPath = "/join/"

// InvitationTTL is how long an invitation link works.
const InvitationTTL = 7 * 24 * time.Hour

// invitationPrefix starts an invitation token.
const invitationPrefix = "hmi_"

// Member is a member as the members API shows it.
type Member struct {
	ID         string    `json:"id"`
	Email      string    `json:"email"`
	Name       *string   `json:"name"`
	Role       string    `json:"role"`
	Workspaces []string  `json:"workspaces"`
	CreatedAt  time.Time `json:"created_at"`
}

// Invitation is a pending invitation as the members API shows it; URL only in the answer that
// created it.
type Invitation struct {
	ID         string    `json:"id"`
	Email      string    `json:"email"`
	Role       string    `json:"role"`
	Workspaces []string  `json:"workspaces"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	URL        string    `json:"url,omitempty"`
}

func memberView(u *persistence.User, m *persistence.Member) Member {
	ws := m.Workspaces
	if ws == nil {
		ws = []string{}
	}
	return Member{ID: u.ID, Email: u.Email, Name: u.Name, Role: m.Role, Workspaces: ws, CreatedAt: m.CreatedAt}
}

func invitationView(i *persistence.Invitation) Invitation {
	ws := i.Workspaces
	if ws == nil {
		ws = []string{}
	}
	return Invitation{ID: i.ID, Email: i.Email, Role: i.Role, Workspaces: ws, CreatedAt: i.CreatedAt, ExpiresAt: i.ExpiresAt}
}

// registerMembers adds the members API to the dashboard's group (its least roles are in
// roles.go) and the invitation page to the server.
func (h *handlers) registerMembers(g *echo.Group, e *echo.Echo) {
	g.GET("/members", h.listMembers)
	g.POST("/members/invitations", h.invite)
	g.DELETE("/members/invitations/:id", h.revokeInvitation)
	g.PATCH("/members/:id", h.updateMember)
	g.DELETE("/members/:id", h.removeMember)
	e.GET(JoinPath+":token", h.joinPage, h.Server.SecurityHeaders)
	e.POST(JoinPath+":token", h.joinForm, h.Server.SecurityHeaders)
}

// team is the id of the team's owner the request acts for.
func team(c *echo.Context) string { return server.Principal(c).User.ID }

// MembersBody is the answer of GET /api/members.
type MembersBody struct {
	Data        []Member     `json:"data"`
	Invitations []Invitation `json:"invitations"`
}

// ListMembers reads a team's members and its pending invitations (the members page shows the
// same).
func ListMembers(tx *persistence.Tx, ownerID string, now time.Time) (MembersBody, error) {
	out := MembersBody{Data: []Member{}, Invitations: []Invitation{}}
	ms, err := tx.MembersOf(ownerID)
	if err != nil {
		return out, err
	}
	for _, m := range ms {
		u, err := tx.User(m.UserID)
		if err != nil {
			return out, err
		}
		out.Data = append(out.Data, memberView(u, m))
	}
	is, err := tx.InvitationsOf(ownerID)
	if err != nil {
		return out, err
	}
	for _, i := range is {
		if i.Pending(now) {
			out.Invitations = append(out.Invitations, invitationView(i))
		}
	}
	return out, nil
}

// listMembers is GET /api/members.
func (h *handlers) listMembers(c *echo.Context) error {
	var out MembersBody
	err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		out, err = ListMembers(tx, team(c), h.Now())
		return err
	})
	if err != nil {
		return h.storeError(c, err)
	}
	return c.JSON(http.StatusOK, out)
}

// roleField reads a role.
func roleField(o object, required bool) (string, error) {
	r, err := o.str("role", required)
	if err != nil || r == nil {
		return "", err
	}
	if auth.RoleRank(*r) < 0 {
		return "", apierr.Validation("role: Invalid enum value. Expected 'owner' | 'admin' | 'editor' | 'viewer', received '%s'", truncate(*r, 32))
	}
	return *r, nil
}

// workspacesField reads the workspaces a member is limited to: API ids of the team's workspaces
// (main or a workspace's id), no duplicates; absent, null or empty: every workspace.
func workspacesField(tx *persistence.Tx, o object, ownerID string) ([]string, error) {
	raw, ok := o["workspaces"]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, typeError("workspaces", "array", raw)
	}
	var out []string
	for i, id := range ids {
		w, err := tx.Workspace(ownerID, id)
		if errors.Is(err, persistence.ErrNotFound) {
			return nil, apierr.Validation("workspaces[%d]: no workspace %q in this team", i, truncate(id, 64))
		}
		if err != nil {
			return nil, err
		}
		for _, seen := range out {
			if seen == w.ID {
				return nil, apierr.Validation("workspaces[%d]: %q is listed twice", i, w.ID)
			}
		}
		out = append(out, w.ID)
	}
	return out, nil
}

// invite is POST /api/members/invitations {email, role, workspaces?}.
func (h *handlers) invite(c *echo.Context) error {
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	email, err := o.str("email", true)
	if err != nil {
		return err
	}
	addr := strings.ToLower(strings.TrimSpace(*email))
	if a, perr := mail.ParseAddress(addr); perr != nil || a.Address != addr || len(addr) > 254 {
		return apierr.Validation("email: Invalid email")
	}
	role, err := roleField(o, true)
	if err != nil {
		return err
	}
	p := server.Principal(c)
	inviter := p.User.ID
	if p.Member != nil {
		inviter = p.Member.ID
	}
	raw, hash := auth.GenerateToken(invitationPrefix)
	now := h.Now().UTC()
	inv := &persistence.Invitation{ID: uuid.Must(uuid.NewV7()).String(), OwnerID: p.User.ID, InvitedBy: inviter, Email: addr,
		Role: role, CreatedAt: now, ExpiresAt: now.Add(InvitationTTL)}
	err = h.Store.Update(c.Request().Context(), func(tx *persistence.Tx) error {
		ws, err := workspacesField(tx, o, p.User.ID)
		if err != nil {
			return err
		}
		inv.Workspaces = ws
		if _, err := tx.UserByEmail(addr); err == nil {
			return apierr.Validation("email: %s already has a Herald user, who cannot join another team; invite another address", addr)
		} else if !errors.Is(err, persistence.ErrNotFound) {
			return err
		}
		return tx.PutInvitation(inv, hash)
	})
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if err != nil {
		return h.storeError(c, err)
	}
	h.Log.Info("member invited", append(server.LogAttrs(c), "invitation_id", inv.ID, "role", role)...)
	v := invitationView(inv)
	v.URL = h.Server.PublicURL(JoinPath + raw)
	return c.JSON(http.StatusCreated, v)
}

// revokeInvitation is DELETE /api/members/invitations/:id.
func (h *handlers) revokeInvitation(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	now := h.Now().UTC()
	err = h.Store.Update(c.Request().Context(), func(tx *persistence.Tx) error {
		inv, err := tx.Invitation(id)
		if err != nil || inv.OwnerID != team(c) || !inv.Pending(now) {
			return apierr.NotFound("invitation")
		}
		inv.RevokedAt = &now
		return tx.PutInvitation(inv, nil)
	})
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if err != nil {
		return h.storeError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// teamMember reads a member of the request's team by their user id: 404 for anyone else.
func teamMember(tx *persistence.Tx, c *echo.Context, id string) (*persistence.Member, error) {
	m, err := tx.Member(id)
	if errors.Is(err, persistence.ErrNotFound) || err == nil && m.OwnerID != team(c) {
		return nil, apierr.NotFound("member")
	}
	return m, err
}

// updateMember is PATCH /api/members/:id {role?, workspaces?}. A member cannot change their own
// role or workspaces (an owner-role member cannot lock the others out by demoting themselves by
// mistake, nor widen their own reach).
func (h *handlers) updateMember(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	if !o.has("role") && !o.has("workspaces") {
		return apierr.Validation("send at least one of role, workspaces")
	}
	role, err := roleField(o, false)
	if err != nil {
		return err
	}
	if p := server.Principal(c); p.Member != nil && p.Member.ID == id {
		return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "a member cannot change their own role or workspaces")
	}
	var view Member
	err = h.Store.Update(c.Request().Context(), func(tx *persistence.Tx) error {
		m, err := teamMember(tx, c, id)
		if err != nil {
			return err
		}
		if role != "" {
			m.Role = role
		}
		if o.has("workspaces") {
			if m.Workspaces, err = workspacesField(tx, o, m.OwnerID); err != nil {
				return err
			}
		}
		u, err := tx.User(m.UserID)
		if err != nil {
			return err
		}
		view = memberView(u, m)
		return tx.PutMember(m)
	})
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if err != nil {
		return h.storeError(c, err)
	}
	return c.JSON(http.StatusOK, view)
}

// removeMember is DELETE /api/members/:id: the member's user, password and sessions go in one
// transaction, so that their next request is refused, and the streams they hold end.
func (h *handlers) removeMember(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	if p := server.Principal(c); p.Member != nil && p.Member.ID == id {
		return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "a member cannot remove themselves; ask the team's owner")
	}
	ended := 0
	err = h.Store.Update(c.Request().Context(), func(tx *persistence.Tx) error {
		m, err := teamMember(tx, c, id)
		if err != nil {
			return err
		}
		ended, err = tx.DeleteMember(m)
		return err
	})
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if err != nil {
		return h.storeError(c, err)
	}
	h.Server.Sessions().EndedSessions()
	h.Log.Info("member removed", append(server.LogAttrs(c), "member_id", id, "sessions_ended", ended)...)
	return c.NoContent(http.StatusNoContent)
}

// joinTemplate is the invitation page.
var joinTemplate = template.Must(template.New("join").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Herald: {{.Title}}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/app.css"></head>
<body class="signin-page">
<main id="main" class="signin">
<p class="signin-brand">Herald</p>
<div class="card stack">
<h1>{{.Title}}</h1>
{{if .Invite}}<p>{{.Inviter}} invites <strong>{{.Invite.Email}}</strong> to their team on Herald as <strong>{{.Invite.Role}}</strong>, for {{.Where}}.</p>{{end}}
{{if .Message}}<p class="flash error" role="alert">{{.Message}}</p>{{end}}
{{if .Form}}<form method="post" action="{{.Action}}">
<p><label for="name">Your name</label><input id="name" name="name" value="{{.Name}}" autocomplete="name" maxlength="200" required></p>
<p><label for="password">Choose a password</label><input id="password" type="password" name="password" autocomplete="new-password" required></p>
<p><button type="submit">Join the team</button></p>
</form>{{end}}
</div>
</main>
</body>
</html>
`))

type joinView struct {
	Title, Message, Inviter, Where, Action, Name string
	Invite                                       *persistence.Invitation
	Form                                         bool
}

func (h *handlers) renderJoin(c *echo.Context, status int, v joinView) error {
	var b bytes.Buffer
	if err := joinTemplate.Execute(&b, v); err != nil {
		return err
	}
	return c.HTMLBlob(status, b.Bytes())
}

// joinRefusal answers the page of a link that cannot be used; refused is false when the
// invitation can be.
func (h *handlers) joinRefusal(c *echo.Context, inv *persistence.Invitation, taken bool) (refused bool, err error) {
	now := h.Now()
	refused = true
	switch {
	case inv == nil:
		return refused, h.renderJoin(c, http.StatusNotFound, joinView{Title: "This invitation link is not valid",
			Message: "Check that the whole link was copied, or ask the person who invited you for a new one."})
	case inv.UsedAt != nil:
		return refused, h.renderJoin(c, http.StatusGone, joinView{Title: "This invitation was already used",
			Message: "An invitation works once. Sign in with the e-mail and password chosen then, or ask for a new invitation."})
	case inv.RevokedAt != nil:
		return refused, h.renderJoin(c, http.StatusGone, joinView{Title: "This invitation was revoked",
			Message: "The person who invited you withdrew it. Ask them for a new one if you should join."})
	case !now.Before(inv.ExpiresAt):
		return refused, h.renderJoin(c, http.StatusGone, joinView{Title: "This invitation has expired",
			Message: "Invitations work for 7 days. Ask the person who invited you for a new one."})
	case taken:
		return refused, h.renderJoin(c, http.StatusConflict, joinView{Title: "This e-mail already has a Herald user",
			Message: inv.Email + " already signs in to Herald, and a Herald user cannot join another team. Ask the person who invited you to invite another address."})
	}
	return false, nil
}

// joinState reads the invitation of a link's token, who invites, the names of the workspaces it
// opens, and whether its e-mail already has a user. inv is nil for a token that names none.
func (h *handlers) joinState(tx *persistence.Tx, token string) (inv *persistence.Invitation, inviter, where string, taken bool, err error) {
	if !auth.WellFormedToken(token, invitationPrefix) {
		return nil, "", "", false, nil
	}
	inv, err = tx.InvitationByHash(auth.Hash(token))
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, "", "", false, nil
	}
	if err != nil {
		return nil, "", "", false, err
	}
	if _, err := tx.UserByEmail(inv.Email); err == nil {
		taken = true
	} else if !errors.Is(err, persistence.ErrNotFound) {
		return nil, "", "", false, err
	}
	if u, err := tx.User(inv.InvitedBy); err == nil {
		inviter = u.Email
		if u.Name != nil {
			inviter = *u.Name + " (" + u.Email + ")"
		}
	} else {
		inviter = "A Herald user"
	}
	where = "every workspace of the team"
	if len(inv.Workspaces) > 0 {
		var names []string
		for _, id := range inv.Workspaces {
			if w, err := tx.Workspace(inv.OwnerID, id); err == nil {
				names = append(names, w.Name)
			}
		}
		where = "the workspace" + map[bool]string{true: "s", false: ""}[len(names) > 1] + " " + strings.Join(names, ", ")
	}
	return inv, inviter, where, taken, nil
}

// joinPage is GET /join/:token: who invites whom to what, and the form to join.
func (h *handlers) joinPage(c *echo.Context) error {
	token := c.Param("token")
	var (
		inv            *persistence.Invitation
		inviter, where string
		taken          bool
	)
	err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		inv, inviter, where, taken, err = h.joinState(tx, token)
		return err
	})
	if err != nil {
		return h.storeError(c, err)
	}
	if refused, err := h.joinRefusal(c, inv, taken); refused {
		return err
	}
	return h.renderJoin(c, http.StatusOK, joinView{Title: "Join a team on Herald", Invite: inv, Inviter: inviter, Where: where,
		Action: JoinPath + token, Form: true})
}

// errJoinEnded is a join whose invitation ended, or whose e-mail was taken, between the page and
// the form's post: the page is shown again and says which.
var errJoinEnded = errors.New("the invitation can no longer be used")

// joinForm is POST /join/:token (name, password): creates the member's user, marks the
// invitation used, and signs them in. Everything is checked again in the transaction that writes,
// so that two posts of one link create one member.
func (h *handlers) joinForm(c *echo.Context) error {
	token := c.Param("token")
	if !h.Server.SameSite(c) {
		return h.renderJoin(c, http.StatusForbidden, joinView{Title: "Join a team on Herald", Message: "Cross-site form refused: join from the invitation's own page."})
	}
	if err := c.Request().ParseForm(); err != nil {
		return apierr.Validation("the form could not be read")
	}
	name := strings.TrimSpace(c.Request().PostForm.Get("name"))
	pw := c.Request().PostForm.Get("password")
	var (
		inv            *persistence.Invitation
		inviter, where string
		taken          bool
	)
	if err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		inv, inviter, where, taken, err = h.joinState(tx, token)
		return err
	}); err != nil {
		return h.storeError(c, err)
	}
	if refused, err := h.joinRefusal(c, inv, taken); refused {
		return err
	}
	again := func(status int, msg string) error {
		return h.renderJoin(c, status, joinView{Title: "Join a team on Herald", Invite: inv, Inviter: inviter, Where: where,
			Action: JoinPath + token, Form: true, Name: name, Message: msg})
	}
	if name == "" || utf8.RuneCountInString(name) > 200 || !utf8.ValidString(name) {
		return again(http.StatusBadRequest, "Enter your name (at most 200 characters).")
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	phc, err := h.Server.Sessions().NewPasswordHash(ctx, pw)
	switch {
	case errors.Is(err, auth.ErrInvalid):
		return again(http.StatusBadRequest, "The password was refused: "+strings.TrimPrefix(err.Error(), auth.ErrInvalid.Error()+": ")+".")
	case errors.Is(err, session.ErrBusy):
		return again(http.StatusServiceUnavailable, session.ErrBusy.Error()+".")
	case err != nil:
		return h.storeError(c, err)
	}
	now := h.Now().UTC()
	var u *persistence.User
	err = h.Store.Update(ctx, func(tx *persistence.Tx) error {
		cur, err := tx.InvitationByHash(auth.Hash(token))
		if err != nil {
			return err
		}
		if !cur.Pending(now) {
			return errJoinEnded
		}
		owner, err := tx.User(cur.OwnerID)
		if err != nil {
			return err
		}
		u = &persistence.User{ID: uuid.Must(uuid.NewV7()).String(), Email: cur.Email, Name: &name, Plan: owner.Plan,
			Timezone: owner.Timezone, CreatedAt: now}
		if err := tx.CreateUser(u); err != nil {
			if errors.Is(err, persistence.ErrExists) {
				return errJoinEnded
			}
			return err
		}
		if err := tx.SetPassword(u.ID, phc); err != nil {
			return err
		}
		if err := tx.PutMember(&persistence.Member{UserID: u.ID, OwnerID: cur.OwnerID, Role: cur.Role, Workspaces: cur.Workspaces,
			InvitedBy: cur.InvitedBy, CreatedAt: now}); err != nil {
			return err
		}
		cur.UsedAt, cur.MemberID = &now, u.ID
		return tx.PutInvitation(cur, nil)
	})
	if errors.Is(err, errJoinEnded) || errors.Is(err, persistence.ErrNotFound) {
		return h.joinPage(c) // says why, read afresh
	}
	if err != nil {
		return h.storeError(c, err)
	}
	h.Log.Info("member joined", append(server.LogAttrs(c), "invitation_id", inv.ID, "user_id", u.ID)...)
	iss, err := h.Server.Sessions().Open(ctx, u)
	if err != nil {
		return h.storeError(c, err)
	}
	h.Server.SetSessionCookie(c, iss.Token)
	return c.Redirect(http.StatusSeeOther, "/")
}
