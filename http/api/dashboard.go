package api

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/persistence"
)

// The dashboard's door: people in a browser, on a session cookie with a CSRF token (DESIGN.md,
// the two doors; docs/dashboard.md). These routes are not the public API: they are left out of
// the OpenAPI document by rule (docs/decisions.md).
//
//	POST   /api/session           {email, password} → 200 {user, csrf_token} and the cookie
//	GET    /api/session           → 200 {user, csrf_token}, or 401 unauthorized
//	DELETE /api/session           → 204, the session ended server-side
//	POST   /api/session/workspace {workspace_id} → 200 Workspace: the workspace the dashboard
//	                              shows from now on ("main" or a workspace's id; 404 for none of the user's)
//	PATCH  /api/profile           {name?, timezone?} → the body of GET /api/me
//	POST   /api/profile/password  {current_password, new_password} → 204; other sessions end
//	GET    /signin?next=PATH      the sign-in form (HTML)
//	POST   /signin                the form's post: signs in, sets the cookie, redirects to next
//	POST   /signout               the signed-in page's form (csrf_token field): signs out
//
// Besides these, /api serves every /v1 operation on the session (routes.go: one list mounted on
// both doors), GET /api/me included (the body of GET /v1/me with api_key null).

// SignInPath is the sign-in page.
const SignInPath = "/signin"

// registerDashboard adds the dashboard's routes.
func (h *handlers) registerDashboard(e *echo.Echo) {
	s := h.Server
	g := e.Group("/api", s.SecurityHeaders)
	g.POST("/session", h.signIn)
	g.GET("/session", h.sessionInfo, s.SessionAuth)
	g.DELETE("/session", h.signOut, s.SessionAuth)
	g.POST("/session/workspace", h.switchWorkspace, s.SessionAuth)
	g.PATCH("/profile", h.updateProfile, s.SessionAuth)
	g.POST("/profile/password", h.changePassword, s.SessionAuth)
	e.GET(SignInPath, h.signInPage, s.SecurityHeaders)
	e.POST(SignInPath, h.signInForm, s.SecurityHeaders)
	e.POST("/signout", h.signOutForm, s.SecurityHeaders, s.SessionAuth)
}

// SessionBody is the answer of POST and GET /api/session.
type SessionBody struct {
	User      User   `json:"user"`
	CSRFToken string `json:"csrf_token"`
}

func userView(u *persistence.User) User {
	tz := u.Timezone
	if tz == "" {
		tz = "UTC"
	}
	created := u.CreatedAt
	return User{ID: u.ID, Email: u.Email, Name: u.Name, Image: u.Image, Plan: u.Plan, Timezone: tz, CreatedAt: &created}
}

func tooManySignIns(te *session.ThrottledError) *apierr.Error {
	return apierr.New(http.StatusTooManyRequests, apierr.CodeRateLimitExceeded, "%s", te.Error()).
		WithHeader("Retry-After", strconv.Itoa(te.Seconds()))
}

// hasherBusy answers an attempt that found the password hasher busy for session.HashWait:
// nothing was checked, the attempt counts for nothing, and it may be sent again at once.
func hasherBusy() *apierr.Error {
	return apierr.Unavailable(session.ErrBusy.Error() + "; nothing was checked")
}

var errCrossSite = apierr.New(http.StatusForbidden, apierr.CodeForbidden, "cross-site sign-in refused: sign in from Herald's own pages")

// signIn is POST /api/session.
func (h *handlers) signIn(c *echo.Context) error {
	if !h.Server.SameSite(c) {
		return errCrossSite
	}
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	email, err := o.str("email", true)
	if err != nil {
		return err
	}
	pw, err := o.str("password", true)
	if err != nil {
		return err
	}
	iss, err := h.doSignIn(c, *email, *pw)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, SessionBody{User: userView(iss.User), CSRFToken: iss.Record.CSRFToken})
}

// doSignIn signs in and sets the cookie; its errors are the API's.
func (h *handlers) doSignIn(c *echo.Context, email, pw string) (*session.Issued, error) {
	ctx, cancel := h.askContext(c)
	defer cancel()
	iss, err := h.Server.Sessions().SignIn(ctx, email, pw, server.ClientAddress(c))
	var te *session.ThrottledError
	switch {
	case errors.As(err, &te):
		h.Log.Warn("sign-in throttled", "request_id", server.RequestID(c), "retry_after_seconds", te.Seconds())
		return nil, tooManySignIns(te)
	case errors.Is(err, session.ErrBusy):
		h.Log.Warn("sign-in refused: the password hasher is busy", "request_id", server.RequestID(c))
		return nil, hasherBusy()
	case errors.Is(err, session.ErrInvalid):
		h.Log.Info("sign-in failed", "request_id", server.RequestID(c))
		return nil, apierr.New(http.StatusUnauthorized, apierr.CodeUnauthorized, "invalid e-mail or password")
	case errors.Is(err, persistence.ErrWriteFailed):
		return nil, server.StoreFailure(c, h.Log, err)
	case err != nil:
		h.Log.Error("sign-in: cannot check", "request_id", server.RequestID(c), "error", err)
		return nil, apierr.Internal()
	}
	h.Server.SetSessionCookie(c, iss.Token)
	h.Log.Info("signed in", "request_id", server.RequestID(c), "user_id", iss.User.ID)
	return iss, nil
}

// sessionInfo is GET /api/session.
func (h *handlers) sessionInfo(c *echo.Context) error {
	s := server.Session(c)
	return c.JSON(http.StatusOK, SessionBody{User: userView(s.User), CSRFToken: s.Record.CSRFToken})
}

// signOut is DELETE /api/session.
func (h *handlers) signOut(c *echo.Context) error {
	if err := h.endSession(c); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *handlers) endSession(c *echo.Context) error {
	s := server.Session(c)
	ctx, cancel := h.askContext(c)
	defer cancel()
	if err := h.Server.Sessions().SignOut(ctx, s); err != nil {
		return h.storeError(c, err)
	}
	h.Server.ClearSessionCookie(c)
	h.Log.Info("signed out", server.LogAttrs(c)...)
	return nil
}

// switchWorkspace is POST /api/session/workspace {workspace_id}: the dashboard's workspace
// switcher. The choice is kept in the session record, so every page and every /api call of this
// session acts in that workspace until it is switched again (or deleted: then main). It changes
// what the session shows, never what a key or another session sees.
func (h *handlers) switchWorkspace(c *echo.Context) error {
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	for k := range o {
		if k != "workspace_id" {
			return apierr.Validation("%s: Unrecognized key; send workspace_id", truncate(k, 64))
		}
	}
	id, err := o.str("workspace_id", true)
	if err != nil {
		return err
	}
	p := server.Principal(c)
	want := strings.TrimSpace(*id)
	if want == p.User.ID {
		want = persistence.MainWorkspace
	}
	if want != persistence.MainWorkspace {
		if want, err = parseUUID("workspace_id", want); err != nil {
			return apierr.NotFound("workspace")
		}
	}
	var w *persistence.Workspace
	err = h.Store.View(func(tx *persistence.Tx) error {
		var err error
		w, err = tx.Workspace(p.User.ID, want)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return apierr.NotFound("workspace")
	}
	if err != nil {
		return h.storeError(c, err)
	}
	if m := server.Session(c).Member; m != nil && !m.Allows(w.ID) {
		return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "your role in this team does not open workspace %s", w.ID)
	}
	stored := w.ID
	if w.Main() {
		stored = ""
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	err = h.Server.Sessions().SetWorkspace(ctx, server.Session(c), stored)
	if errors.Is(err, session.ErrNoSession) {
		return unauthorizedSession()
	}
	if err != nil {
		return h.storeError(c, err)
	}
	return c.JSON(http.StatusOK, workspaceView(w))
}

func unauthorizedSession() *apierr.Error {
	return apierr.New(http.StatusUnauthorized, apierr.CodeUnauthorized, "the session is not valid (signed out, or ended by a password change); sign in again")
}

// updateProfile is PATCH /api/profile {name?, timezone?}.
func (h *handlers) updateProfile(c *echo.Context) error {
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	if !o.has("name") && !o.has("timezone") {
		return apierr.Validation("send at least one of name, timezone")
	}
	var name *string
	clearName := false
	if o.has("name") {
		if string(bytes.TrimSpace(o["name"])) == "null" {
			clearName = true
		} else {
			n, err := o.str("name", false)
			if err != nil {
				return err
			}
			v := strings.TrimSpace(*n)
			if v == "" || utf8.RuneCountInString(v) > 200 {
				return apierr.Validation("name: String must contain 1 to 200 character(s)")
			}
			name = &v
		}
	}
	var tz *string
	if o.has("timezone") {
		if tz, err = o.str("timezone", true); err != nil {
			return err
		}
		if _, lerr := time.LoadLocation(*tz); lerr != nil || *tz == "" || *tz == "Local" {
			return apierr.Validation("timezone: %q is not an IANA time zone (e.g. Europe/Paris)", truncate(*tz, 64))
		}
	}
	uid := server.Session(c).User.ID // a member's own profile, not the owner's they act for
	var u *persistence.User
	err = h.Store.Update(c.Request().Context(), func(tx *persistence.Tx) error {
		var err error
		if u, err = tx.User(uid); err != nil {
			return err
		}
		if clearName {
			u.Name = nil
		} else if name != nil {
			u.Name = name
		}
		if tz != nil {
			u.Timezone = *tz
		}
		return tx.PutUser(u)
	})
	if err != nil {
		return h.storeError(c, err)
	}
	h.Server.UserChanged()
	return c.JSON(http.StatusOK, userView(u))
}

// changePassword is POST /api/profile/password {current_password, new_password}.
func (h *handlers) changePassword(c *echo.Context) error {
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	cur, err := o.str("current_password", true)
	if err != nil {
		return err
	}
	next, err := o.str("new_password", true)
	if err != nil {
		return err
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	err = h.Server.Sessions().ChangePassword(ctx, server.Session(c), *cur, *next, server.ClientAddress(c))
	var te *session.ThrottledError
	switch {
	case errors.As(err, &te):
		return tooManySignIns(te)
	case errors.Is(err, session.ErrBusy):
		return hasherBusy()
	case errors.Is(err, session.ErrInvalid):
		return apierr.Validation("current_password: the current password is wrong")
	case errors.Is(err, auth.ErrInvalid):
		return apierr.Validation("new_password: %s", strings.TrimPrefix(err.Error(), auth.ErrInvalid.Error()+": "))
	case err != nil:
		return h.storeError(c, err)
	}
	h.Log.Info("password changed; the user's other sessions ended", server.LogAttrs(c)...)
	return c.NoContent(http.StatusNoContent)
}

// safeNext returns next when it is a path on this server ("/…", never "//host" or a URL with a
// scheme), else "" (an open redirect refused).
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n\t") || len(next) > 4096 {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") {
		return ""
	}
	return next
}

// signInTemplate is the sign-in page. It takes the dashboard's stylesheet (http/web serves it at
// /static/app.css; the strict policy allows it, as it allows nothing inline).
var signInTemplate = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Herald: {{.Title}}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/app.css"></head>
<body class="signin-page">
<main id="main" class="signin">
<p class="signin-brand">Herald</p>
<div class="card stack">
<h1>{{.Title}}</h1>
{{if .Message}}<p class="flash {{if .User}}ok{{else}}error{{end}}" role="alert">{{.Message}}</p>{{end}}
{{if .User}}<form method="post" action="/signout">
<input type="hidden" name="csrf_token" value="{{.CSRF}}">
<p class="actions"><a href="/">Open the dashboard</a> <button type="submit" class="secondary">Sign out</button></p>
</form>{{else}}<form method="post" action="/signin">
<input type="hidden" name="next" value="{{.Next}}">
<p><label for="email">E-mail</label><input id="email" type="email" name="email" value="{{.Email}}" autocomplete="username" required></p>
<p><label for="password">Password</label><input id="password" type="password" name="password" autocomplete="current-password" required></p>
<p><button type="submit">Sign in</button></p>
</form>{{end}}
</div>
</main>
</body>
</html>
`))

type signInView struct {
	Title, Message, Next, Email, CSRF string
	User                              *persistence.User
}

func (h *handlers) renderSignIn(c *echo.Context, status int, v signInView) error {
	var b bytes.Buffer
	if err := signInTemplate.Execute(&b, v); err != nil {
		return err
	}
	return c.HTMLBlob(status, b.Bytes())
}

// signInPage is GET /signin?next=PATH: the form, or who is signed in.
func (h *handlers) signInPage(c *echo.Context) error {
	s, err := h.Server.SessionFromCookie(c)
	if err != nil {
		return h.storeError(c, err)
	}
	if s != nil {
		return h.renderSignIn(c, http.StatusOK, signInView{Title: "Signed in", User: s.User, CSRF: s.Record.CSRFToken,
			Message: "You are signed in to Herald as " + s.User.Email + "."})
	}
	return h.renderSignIn(c, http.StatusOK, signInView{Title: "Sign in", Next: safeNext(c.QueryParam("next"))})
}

// signInForm is POST /signin (application/x-www-form-urlencoded: email, password, next).
func (h *handlers) signInForm(c *echo.Context) error {
	if !h.Server.SameSite(c) {
		return h.renderSignIn(c, http.StatusForbidden, signInView{Title: "Sign in", Message: "Cross-site sign-in refused: sign in from this page."})
	}
	r := c.Request()
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(MaxJSONBody)
		}
		return apierr.Validation("the sign-in form could not be read")
	}
	email, next := r.PostForm.Get("email"), safeNext(r.PostForm.Get("next"))
	_, err := h.doSignIn(c, email, r.PostForm.Get("password"))
	var ae *apierr.Error
	if errors.As(err, &ae) && (ae.Status < 500 || ae.Status == http.StatusServiceUnavailable) {
		for k, vs := range ae.Header {
			c.Response().Header()[k] = vs
		}
		return h.renderSignIn(c, ae.Status, signInView{Title: "Sign in", Message: ae.Message, Next: next, Email: email})
	}
	if err != nil {
		return err
	}
	if next == "" {
		next = "/" // the dashboard's overview (http/web)
	}
	return c.Redirect(http.StatusSeeOther, next)
}

// signOutForm is POST /signout (the signed-in page's form, its CSRF token in the csrf_token field).
func (h *handlers) signOutForm(c *echo.Context) error {
	if err := h.endSession(c); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, SignInPath)
}
