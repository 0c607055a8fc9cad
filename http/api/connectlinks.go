package api

import (
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// connectLinksPath is the collection of a workspace's connect links (accountlink/links.go).
const connectLinksPath = "/workspaces/:id/connect-links"

// maxLinkNote bounds a link's note, in characters.
const maxLinkNote = 500

// connectLinkRoutes are the connect link operations of both doors.
func (h *handlers) connectLinkRoutes() []route {
	return []route{
		{"POST", connectLinksPath, h.createConnectLink, auth.ScopeAccountsWrite},
		{"GET", connectLinksPath, h.listConnectLinks, auth.ScopeAccountsRead},
		{"DELETE", connectLinksPath + "/:linkId", h.revokeConnectLink, auth.ScopeAccountsWrite},
	}
}

// connectLinkJSON is a connect link as the API shows it. URL is set only in the answer to its
// creation (the one place its secret appears); the list shows Prefix instead.
type connectLinkJSON struct {
	ID          string               `json:"id"`
	WorkspaceID string               `json:"workspace_id"`
	URL         string               `json:"url,omitempty"`
	Prefix      string               `json:"prefix"`
	Platforms   []string             `json:"platforms"`
	Note        *string              `json:"note"`
	ExpiresAt   time.Time            `json:"expires_at"`
	CreatedAt   time.Time            `json:"created_at"`
	RevokedAt   *time.Time           `json:"revoked_at"`
	Uses        int                  `json:"uses"`
	LastUsedAt  *time.Time           `json:"last_used_at"`
	Log         []connectLinkUseJSON `json:"log"`
}

// connectLinkUseJSON is one use in a link's log.
type connectLinkUseJSON struct {
	At       time.Time `json:"at"`
	Event    string    `json:"event"`
	Platform *string   `json:"platform"`
	Detail   *string   `json:"detail"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// toConnectLinkJSON shows a link; offered are the networks it offers when it names none.
func toConnectLinkJSON(l *persistence.ConnectLink, offered []platforms.Platform) connectLinkJSON {
	out := connectLinkJSON{
		ID: l.ID, WorkspaceID: persistence.WorkspaceOf(l.WorkspaceID), Prefix: l.Prefix, Platforms: l.Platforms,
		Note: optional(l.Note), ExpiresAt: l.ExpiresAt, CreatedAt: l.CreatedAt, RevokedAt: l.RevokedAt,
		Uses: l.Uses, LastUsedAt: l.LastUsedAt, Log: []connectLinkUseJSON{},
	}
	if len(out.Platforms) == 0 {
		out.Platforms = []string{}
		for _, p := range offered {
			out.Platforms = append(out.Platforms, string(p))
		}
	}
	for _, u := range l.Log {
		out.Log = append(out.Log, connectLinkUseJSON{At: u.At, Event: u.Event, Platform: optional(u.Platform), Detail: optional(u.Detail)})
	}
	return out
}

// linkWorkspace is the principal of a connect link route acting in the workspace its path names.
func (h *handlers) linkWorkspace(c *echo.Context) (*auth.Principal, error) {
	if h.Connect == nil {
		return nil, apierr.Unavailable("connecting accounts is not available on this server")
	}
	return h.Server.InWorkspace(c, c.Param("id"))
}

// createConnectLink is POST /v1/workspaces/:id/connect-links {platforms?, expires_in_hours?,
// note?}: 201 with the link, its url shown this once.
func (h *handlers) createConnectLink(c *echo.Context) error {
	p, err := h.linkWorkspace(c)
	if err != nil {
		return err
	}
	raw, err := readRaw(c.Request())
	if err != nil {
		return err
	}
	o := object{}
	if strings.TrimSpace(string(raw)) != "" {
		if o, err = parseObject(raw); err != nil {
			return err
		}
	}
	in := accountlink.NewLink{UserID: p.User.ID, WorkspaceID: p.ObjectWorkspace(), Hours: accountlink.LinkDefaultHours}
	if o.has("expires_in_hours") {
		n, err := o.integer("expires_in_hours")
		if err != nil {
			return err
		}
		if n < 1 || n > accountlink.LinkMaxHours {
			return apierr.Validation("expires_in_hours: must be between 1 and %d (hours), received %d", accountlink.LinkMaxHours, n)
		}
		in.Hours = int(n)
	}
	if in.Platforms, err = h.linkPlatforms(o); err != nil {
		return err
	}
	note, err := o.str("note", false)
	if err != nil {
		return err
	}
	if note != nil {
		in.Note = strings.TrimSpace(*note)
		if utf8.RuneCountInString(in.Note) > maxLinkNote {
			return apierr.Validation("note: must be at most %d characters", maxLinkNote)
		}
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	l, u, err := h.Connect.CreateLink(ctx, in, h.Now())
	if e := server.StoreFailure(c, h.Log, err); e != nil {
		return e
	}
	if err != nil {
		h.Log.Error("connect link: cannot create", append(server.LogAttrs(c), "error", err)...)
		return apierr.Internal()
	}
	out := toConnectLinkJSON(l, h.Connect.Offerable())
	out.URL = u
	return c.JSON(http.StatusCreated, out)
}

// linkPlatforms reads the platforms a new link offers: distinct networks whose consent runs in
// the browser (X's too, with an X app) and that have an OAuth client on this server. Absent or
// empty: every such network.
func (h *handlers) linkPlatforms(o object) ([]platforms.Platform, error) {
	if !o.has("platforms") {
		return nil, nil
	}
	var names []string
	raw := o["platforms"]
	if jsonType(raw) != "array" {
		return nil, typeError("platforms", "array", raw)
	}
	for i, it := range splitArray(raw) {
		if jsonType(it) != "string" {
			return nil, apierr.Validation("platforms.%d: Expected string, received %s", i, jsonType(it))
		}
		s, _ := unquote(it)
		names = append(names, s)
	}
	offerable := h.Connect.Offerable()
	var out []platforms.Platform
	for i, s := range names {
		p := platforms.Platform(s)
		switch {
		case !p.Valid():
			return nil, apierr.Validation("platforms: Invalid enum value. Expected %s, received '%s' (item %d)", consentPlatforms, truncate(s, 64), i)
		case !accountlink.IsConsent(p):
			return nil, apierr.Validation("platforms: %s connects with credentials the user brings, not through a link (item %d); allowed: %s", p, i, consentPlatforms)
		case !platformIn(p, offerable):
			return nil, apierr.Validation("platforms: %s is not configured on this server (it has no OAuth client for %s)", p, displayName(p))
		case platformIn(p, out):
			return nil, apierr.Validation("platforms: duplicate platform %s", p)
		}
		out = append(out, p)
	}
	return out, nil
}

func platformIn(p platforms.Platform, in []platforms.Platform) bool {
	for _, q := range in {
		if q == p {
			return true
		}
	}
	return false
}

// listConnectLinks is GET /v1/workspaces/:id/connect-links: {data: [link]}, oldest first, with
// their uses and revocation, never their secret.
func (h *handlers) listConnectLinks(c *echo.Context) error {
	p, err := h.linkWorkspace(c)
	if err != nil {
		return err
	}
	ls, err := h.Connect.Links(p.Scope())
	if e := server.StoreFailure(c, h.Log, err); e != nil {
		return e
	}
	if err != nil {
		h.Log.Error("connect link: cannot list", append(server.LogAttrs(c), "error", err)...)
		return apierr.Internal()
	}
	offered := h.Connect.Offerable()
	out := make([]connectLinkJSON, 0, len(ls))
	for _, l := range ls {
		out = append(out, toConnectLinkJSON(l, offered))
	}
	return c.JSON(http.StatusOK, map[string]any{"data": out})
}

// revokeConnectLink is DELETE /v1/workspaces/:id/connect-links/:linkId: 204; the link stops
// working at once (a consent already started through it may still finish within its ten
// minutes). Revoking a revoked link is 204 too.
func (h *handlers) revokeConnectLink(c *echo.Context) error {
	p, err := h.linkWorkspace(c)
	if err != nil {
		return err
	}
	id, err := parseUUID("linkId", c.Param("linkId"))
	if err != nil {
		return err
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	err = h.Connect.RevokeLink(ctx, p.Scope(), id, h.Now())
	if errors.Is(err, persistence.ErrNotFound) {
		return apierr.NotFound("connect link " + id)
	}
	if e := server.StoreFailure(c, h.Log, err); e != nil {
		return e
	}
	if err != nil {
		h.Log.Error("connect link: cannot revoke", append(server.LogAttrs(c), "error", err)...)
		return apierr.Internal()
	}
	return c.NoContent(http.StatusNoContent)
}
