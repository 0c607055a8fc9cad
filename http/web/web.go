// Package web is the dashboard's pages: server-rendered HTML (html/template) with one stylesheet
// and one script embedded in the binary (the Campaigns pages add their own, campaigns.js), no
// build step. Each page has one handler, reads
// committed state from the store directly for display, and changes nothing itself: the page's
// script calls the dashboard's JSON routes (/api/*, http/api) with the session's CSRF token in
// the X-CSRF-Token header, read from the page's <meta name="csrf-token">. So every change goes
// through the same handlers and actors as the public API (DESIGN.md, the two doors).
//
//	GET /                 Overview: accounts and their token health, recent jobs, API usage, quota
//	GET /compose          Compose: text counted per network, accounts, media, publish or schedule
//	GET /posts            Posts: filters and pages
//	GET /posts/:id        one post: per-network status, errors, links, the events timeline
//	GET /calendar         scheduled and published posts by week or month, in the user's zone
//	GET /approvals        the workspace's posts waiting for approval: previews, approve, reject
//	GET /analytics        live analytics: charts of the overview's series, totals by network,
//	                      top posts, accounts to reconnect (analytics.go)
//	GET /inbox            live comment threads (reply, like, hide) and direct messages (reply)
//	GET /accounts         connect (browser networks, X and Bluesky credentials), disconnect
//	GET /developer        API keys (bound to a workspace, limited to scopes) and webhooks
//	GET /workspaces       the user's workspaces: approval, limits, this month's usage; create,
//	                      change, delete, the usage as CSV
//	GET /settings         name, time zone, password
//	GET /campaigns        a CSV campaign checked by a dry run and submitted; the campaigns list
//	GET /campaigns/:id    a campaign's posts followed on its one stream; the failed retried
//	GET /static/:name     the embedded stylesheet and script
//
// Every page's header has the workspace switcher: the page shows the session's workspace
// (persistence.Session.WorkspaceID, set by POST /api/session/workspace), and so do the /api calls
// its script makes, with no header.
//
// A page without a session redirects to /signin?next=<the page>. Every page carries the
// dashboard's security headers (http/server SecurityHeaders: a strict CSP with no inline script
// or style). Everything a user or a network wrote is printed through html/template's escaping;
// no page uses template.HTML. docs/dashboard.md describes the pages.
package web

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/live"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/http/session"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/sim"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// SignInPath is the sign-in page (http/api) that a page without a session redirects to.
const SignInPath = "/signin"

// Deps are what the pages need.
type Deps struct {
	Server *server.Server
	Store  *persistence.Store
	// FreePostQuota is the free plan's posts per calendar month (0: unlimited).
	FreePostQuota int
	// Live serves the analytics and inbox pages (nil: those pages say they are not available).
	Live *live.Service
	// Connect says which networks' consent the server runs (the Accounts page offers X's when
	// the server has an X app; nil: the browser networks only, and X's credential form).
	Connect *accountlink.Service
	Log     *slog.Logger
	Now     func() time.Time
	// SimURL is the network simulator's base URL in sandbox mode (nil, or "": not in sandbox
	// mode). A published post's links then lead to the simulator's page of that publication
	// (view.Link), since the ids in the networks' URLs are the simulator's.
	SimURL func() string
}

type pages struct {
	Deps
	tmpl map[string]*template.Template
}

// pageNames are the templates, one per page, each executed inside layout.html.
var pageNames = []string{"overview", "compose", "posts", "post", "calendar", "approvals", "accounts", "developer", "settings", "members", "workspaces", "campaigns", "campaign", "analytics", "inbox", "error"}

// Paths are the pages' routes (Echo paths) and the static files' route: the dashboard's, not
// the public API's, so they are not in the OpenAPI document.
var Paths = []string{"/", "/compose", "/posts", "/posts/:id", "/calendar", "/approvals", "/accounts", "/developer", "/settings", "/members", "/workspaces", "/campaigns", "/campaigns/:id", "/analytics", "/inbox", StaticPath, "/favicon.ico"}

// StaticPath is the route of the embedded assets.
const StaticPath = "/static/:name"

// Register adds the pages and the static files to the server.
func Register(d Deps) error {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	p := &pages{Deps: d, tmpl: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return fmt.Errorf("web: template %s: %w", name, err)
		}
		p.tmpl[name] = t
	}
	e := d.Server.Echo
	e.GET(StaticPath, p.static)
	// No icon: an empty answer spares every page a 404 in the browser's console.
	e.GET("/favicon.ico", func(c *echo.Context) error { return c.NoContent(http.StatusNoContent) })
	g := e.Group("", d.Server.SecurityHeaders, p.requireSession)
	g.GET("/", p.overview)
	g.GET("/compose", p.compose)
	g.GET("/posts", p.posts)
	g.GET("/posts/:id", p.post)
	g.GET("/calendar", p.calendar)
	g.GET("/approvals", p.approvals)
	g.GET("/accounts", p.accounts)
	g.GET("/developer", p.developer)
	g.GET("/settings", p.settings)
	g.GET("/members", p.members)
	g.GET("/workspaces", p.workspaces)
	g.GET("/campaigns", p.campaigns)
	g.GET("/campaigns/:id", p.campaign)
	g.GET("/analytics", p.analytics)
	g.GET("/inbox", p.inbox)
	return nil
}

// requireSession lets a signed-in browser through and sends any other to the sign-in page,
// which comes back here after signing in.
func (p *pages) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		s, err := p.Server.SessionFromCookie(c)
		if err != nil {
			p.Log.Error("web: session lookup failed", append(server.LogAttrs(c), "error", err)...)
			return p.fail(c, http.StatusInternalServerError, "Herald could not read your session. Try again shortly.")
		}
		if s == nil {
			return c.Redirect(http.StatusSeeOther, SignInPath+"?next="+url.QueryEscape(c.Request().URL.RequestURI()))
		}
		c.Set(server.KeySession, s)
		pr, err := p.Server.SessionPrincipal(c, s)
		if err != nil {
			var ae *apierr.Error
			if errors.As(err, &ae) {
				return p.fail(c, ae.Status, ae.Message)
			}
			p.Log.Error("web: workspace lookup failed", append(server.LogAttrs(c), "error", err)...)
			return p.fail(c, http.StatusInternalServerError, "Herald could not read your workspace. Try again shortly.")
		}
		c.Set(server.KeyPrincipal, pr)
		return next(c)
	}
}

// view is what every page's template receives: the layout's fields and the page's own data.
type view struct {
	Title string
	// Nav is the navigation entry of the page (aria-current).
	Nav  string
	User *persistence.User
	// Me is the person signed in: User itself, or for a member of User's team their own user.
	Me *persistence.User
	// Owner says whether the person manages the team's members (the Members entry).
	Owner bool
	// Scope is the index key of the workspace the page shows (persistence.Scope).
	Scope string
	// Workspace is the workspace the page shows and Workspaces all of the user's, main first
	// (the layout's switcher); nil on the error page.
	Workspace  *persistence.Workspace
	Workspaces []*persistence.Workspace
	CSRF       string
	// Zone is the user's time zone, in which every time is shown.
	Zone *time.Location
	// Sim is the network simulator's base URL in sandbox mode ("" otherwise).
	Sim  string
	Now  time.Time
	Data any
}

// When formats a time (time.Time or *time.Time) in the user's zone, the dashboard's one format
// (formatWhen); "" for none.
func (v view) When(t any) string {
	var tt time.Time
	switch x := t.(type) {
	case time.Time:
		tt = x
	case *time.Time:
		if x == nil {
			return ""
		}
		tt = *x
	default:
		return ""
	}
	if tt.IsZero() {
		return ""
	}
	return formatWhen(tt, v.Zone)
}

// ISO is a time in RFC 3339 for <time datetime>.
func (v view) ISO(t any) string {
	switch x := t.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339)
	case *time.Time:
		if x != nil {
			return x.UTC().Format(time.RFC3339)
		}
	}
	return ""
}

// Scheduled formats a post's time in the zone it was scheduled in (the user's when it has none),
// with the zone's name and the time in UTC beside it: "Tue 1 Dec 2026, 09:30 UTC+05:30
// (Asia/Kolkata); 04:00 UTC". "" for no time.
func (v view) Scheduled(at *time.Time, zone string) string {
	if at == nil || at.IsZero() {
		return ""
	}
	loc := v.Zone
	if zone != "" {
		if l, err := time.LoadLocation(zone); err == nil {
			loc = l
		}
	}
	s := formatWhen(*at, loc) + " (" + loc.String() + ")"
	if loc.String() == "UTC" {
		return s
	}
	u := at.UTC()
	if u.YearDay() != at.In(loc).YearDay() {
		return s + "; " + u.Format("Mon 2 Jan, 15:04") + " UTC"
	}
	return s + "; " + u.Format("15:04") + " UTC"
}

// Link is where a published post's "View on …" leads: the network's URL, or in sandbox mode the
// simulator's page of the publication (the network's URL there has the simulator's id in a real
// site's address). The API's platform_post_url keeps the network's shape in both modes.
func (v view) Link(platform, publicationID, networkURL string) string {
	if v.Sim == "" || publicationID == "" {
		return networkURL
	}
	return v.Sim + sim.PublicationPath(platforms.Platform(platform), publicationID)
}

// ZoneName is the user's IANA zone.
func (v view) ZoneName() string { return v.Zone.String() }

func (p *pages) newView(c *echo.Context, title, nav string, data any) view {
	s, pr := server.Session(c), server.Principal(c)
	v := view{Title: title, Nav: nav, User: pr.User, Me: s.User, Owner: pr.HasRole(auth.RoleOwner), Scope: pr.Scope(), CSRF: s.Record.CSRFToken,
		Zone: userZone(pr.User), Now: p.Now(), Data: data}
	if p.SimURL != nil {
		v.Sim = strings.TrimRight(p.SimURL(), "/")
	}
	// The switcher's list (a member's: the workspaces they may act in); a page whose list cannot
	// be read still shows, without it.
	err := p.Store.View(func(tx *persistence.Tx) error {
		list, err := tx.Workspaces(pr.User.ID)
		if err != nil {
			return err
		}
		for _, w := range list {
			if s.Member != nil && !s.Member.Allows(w.ID) {
				continue
			}
			v.Workspaces = append(v.Workspaces, w)
			if w.ID == pr.WorkspaceID {
				v.Workspace = w
			}
		}
		return nil
	})
	if err != nil {
		p.Log.Error("web: workspaces read failed", append(server.LogAttrs(c), "error", err)...)
	}
	return v
}

func userZone(u *persistence.User) *time.Location {
	if u != nil && u.Timezone != "" {
		if loc, err := time.LoadLocation(u.Timezone); err == nil {
			return loc
		}
	}
	return time.UTC
}

// render executes a page inside the layout.
func (p *pages) render(c *echo.Context, status int, name string, v view) error {
	var b bytes.Buffer
	if err := p.tmpl[name].ExecuteTemplate(&b, "layout.html", v); err != nil {
		p.Log.Error("web: render failed", append(server.LogAttrs(c), "page", name, "error", err)...)
		return c.String(http.StatusInternalServerError, "the page could not be rendered")
	}
	return c.HTMLBlob(status, b.Bytes())
}

// fail renders the error page (inside the layout when signed in).
func (p *pages) fail(c *echo.Context, status int, msg string) error {
	s := server.Session(c)
	if s == nil {
		s = &session.Session{User: &persistence.User{}, Record: &persistence.Session{}}
	}
	v := view{Title: http.StatusText(status), User: s.User, Me: s.User, CSRF: s.Record.CSRFToken, Zone: userZone(s.User), Now: p.Now(), Data: msg}
	return p.render(c, status, "error", v)
}

// storeError logs a failed read and renders the error page.
func (p *pages) storeError(c *echo.Context, err error) error {
	if errors.Is(err, persistence.ErrNotFound) {
		return p.fail(c, http.StatusNotFound, "There is nothing here.")
	}
	p.Log.Error("web: store read failed", append(server.LogAttrs(c), "error", err)...)
	return p.fail(c, http.StatusInternalServerError, "Herald could not read its data. Try again shortly.")
}

// static serves an embedded asset. Names are flat (no directories), so nothing outside static/
// can be reached.
func (p *pages) static(c *echo.Context) error {
	name := c.Param("name")
	if strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
		return c.NoContent(http.StatusNotFound)
	}
	b, err := fs.ReadFile(staticFS, "static/"+name)
	if err != nil {
		return c.NoContent(http.StatusNotFound)
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := c.Response().Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", assetTags[name])
	if match := c.Request().Header.Get("If-None-Match"); match != "" && match == assetTags[name] {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, ct, b)
}
