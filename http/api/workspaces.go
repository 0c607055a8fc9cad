package api

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// Workspaces keep an agency's clients apart (docs/workspaces.md). Every object belongs to one;
// a request acts in the one its Herald-Workspace header names, else its key's own, else main
// (http/server/workspace.go). These routes manage them:
//
//	GET    /v1/workspaces             → 200 {data: [Workspace]}: main first (a bound key: its own only)
//	POST   /v1/workspaces             {name, approval_required?, limits?} → 201 Workspace
//	GET    /v1/workspaces/:id         → 200 Workspace
//	PATCH  /v1/workspaces/:id         {name?, approval_required?, limits?} → 200 Workspace
//	DELETE /v1/workspaces/:id         → 204; 409 while it holds accounts or open posts
//	GET    /v1/workspaces/:id/usage   ?month=YYYY-MM → 200 Usage (JSON, or CSV with Accept: text/csv)
//
// :id is "main" or a workspace's id. A workspace of another user is 404; one a bound key is not
// bound to is 403 with an insufficient_scope challenge, as for the header.

// Workspace is a workspace as the API shows it.
type Workspace struct {
	ID               string          `json:"id"`
	Name             string          `json:"name"`
	ApprovalRequired bool            `json:"approval_required"`
	Limits           WorkspaceLimits `json:"limits"`
	CreatedAt        time.Time       `json:"created_at"`
}

// WorkspaceLimits are a workspace's limits; null is none.
type WorkspaceLimits struct {
	PostsPerMonth *int `json:"posts_per_month"`
	Accounts      *int `json:"accounts"`
}

func workspaceView(w *persistence.Workspace) Workspace {
	return Workspace{ID: w.ID, Name: w.Name, ApprovalRequired: w.ApprovalRequired,
		Limits: WorkspaceLimits{PostsPerMonth: w.Limits.PostsPerMonth, Accounts: w.Limits.Accounts}, CreatedAt: w.CreatedAt.UTC()}
}

// MaxWorkspaces is how many workspaces a user may have besides main.
const MaxWorkspaces = 1000

// MaxWorkspaceName is the longest name of a workspace, in characters.
const MaxWorkspaceName = 100

// maxLimit is the largest number a workspace limit takes.
const maxLimit = 1_000_000_000

// workspacesPath is the collection's path below a door's prefix.
const workspacesPath = "/workspaces"

// workspace is the request's workspace (nil when it cannot be read: the caller goes on without
// its settings, as for main before it was changed).
func (h *handlers) workspace(c *echo.Context) *persistence.Workspace {
	p := server.Principal(c)
	if h.Auth == nil || p == nil {
		return nil
	}
	w, err := h.Auth.Workspace(p.User.ID, p.WorkspaceID)
	if err != nil {
		return nil
	}
	return w
}

// pathWorkspace reads the workspace a route's :id names: the user's (404 otherwise), and for a
// bound key its own (403 otherwise).
func (h *handlers) pathWorkspace(c *echo.Context) (*persistence.Workspace, error) {
	p := server.Principal(c)
	id := c.Param("id")
	if id == p.User.ID {
		id = persistence.MainWorkspace
	}
	if id != persistence.MainWorkspace {
		var err error
		if id, err = parseUUID("id", id); err != nil {
			return nil, apierr.NotFound("workspace")
		}
	}
	if p.Key != nil && p.Key.WorkspaceID != "" && p.Key.WorkspaceID != id {
		return nil, server.BoundElsewhere(p.Key.WorkspaceID, id)
	}
	return h.readWorkspace(c, p.User.ID, id)
}

// readWorkspace reads a user's workspace fresh from the store: 404 when there is none.
func (h *handlers) readWorkspace(c *echo.Context, userID, id string) (*persistence.Workspace, error) {
	var w *persistence.Workspace
	err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		w, err = tx.Workspace(userID, id)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, apierr.NotFound("workspace")
	}
	if err != nil {
		return nil, h.storeError(c, err)
	}
	return w, nil
}

// listWorkspaces is GET /v1/workspaces.
func (h *handlers) listWorkspaces(c *echo.Context) error {
	p := server.Principal(c)
	var list []*persistence.Workspace
	err := h.Store.View(func(tx *persistence.Tx) error {
		if p.Key != nil && p.Key.WorkspaceID != "" {
			w, err := tx.Workspace(p.User.ID, p.Key.WorkspaceID)
			if err == nil {
				list = []*persistence.Workspace{w}
			}
			if errors.Is(err, persistence.ErrNotFound) {
				return nil
			}
			return err
		}
		var err error
		list, err = tx.Workspaces(p.User.ID)
		return err
	})
	if err != nil {
		return h.storeError(c, err)
	}
	out := make([]Workspace, len(list))
	for i, w := range list {
		out[i] = workspaceView(w)
	}
	return c.JSON(http.StatusOK, map[string]any{"data": out})
}

// workspaceFields reads the fields of a create or update into w; creating, name is required.
func workspaceFields(o object, w *persistence.Workspace, creating bool) error {
	for k := range o {
		switch k {
		case "name", "approval_required", "limits":
		default:
			return apierr.Validation("%s: Unrecognized key; a workspace has name, approval_required and limits", truncate(k, 64))
		}
	}
	name, err := o.str("name", creating)
	if err != nil {
		return err
	}
	if name != nil {
		n := strings.TrimSpace(*name)
		switch {
		case n == "":
			return apierr.Validation("name: must not be blank")
		case len([]rune(n)) > MaxWorkspaceName:
			return apierr.Validation("name: String must contain at most %d character(s)", MaxWorkspaceName)
		case strings.ContainsAny(n, "\x00\r\n"):
			return apierr.Validation("name: must be one line of text")
		}
		w.Name = n
	}
	approval, err := o.boolean("approval_required")
	if err != nil {
		return err
	}
	if approval != nil {
		w.ApprovalRequired = *approval
	}
	raw, ok := o["limits"]
	if !ok {
		return nil
	}
	if jsonType(raw) == "null" {
		w.Limits = persistence.WorkspaceLimits{}
		return nil
	}
	if jsonType(raw) != "object" {
		return typeError("limits", "object", raw)
	}
	lo := splitObject(bytes.TrimSpace(raw))
	for k := range lo {
		if k != "posts_per_month" && k != "accounts" {
			return apierr.Validation("limits.%s: Unrecognized key; limits are posts_per_month and accounts", truncate(k, 64))
		}
	}
	for _, f := range []struct {
		name string
		dst  **int
	}{{"posts_per_month", &w.Limits.PostsPerMonth}, {"accounts", &w.Limits.Accounts}} {
		v, ok := lo[f.name]
		if !ok {
			continue
		}
		if jsonType(v) == "null" {
			*f.dst = nil
			continue
		}
		n, err := lo.integer(f.name)
		if err != nil {
			return apierr.Validation("limits.%s: Expected a whole number or null, received %s", f.name, jsonType(v))
		}
		if n < 0 || n > maxLimit {
			return apierr.Validation("limits.%s: Number must be from 0 to %d (null for no limit)", f.name, maxLimit)
		}
		m := int(n)
		*f.dst = &m
	}
	return nil
}

// createWorkspace is POST /v1/workspaces.
func (h *handlers) createWorkspace(c *echo.Context) error {
	p := server.Principal(c)
	if p.Key != nil && p.Key.WorkspaceID != "" {
		return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "this API key is bound to workspace %s and cannot create workspaces", p.Key.WorkspaceID).
			WithHeader("WWW-Authenticate", `Bearer error="insufficient_scope", error_description="the key is bound to one workspace"`)
	}
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	w := &persistence.Workspace{ID: uuid.Must(uuid.NewV7()).String(), UserID: p.User.ID, CreatedAt: h.Now().UTC(), Version: 1}
	if err := workspaceFields(o, w, true); err != nil {
		return err
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	err = h.Store.Update(ctx, func(tx *persistence.Tx) error {
		if tx.CountWorkspaces(p.User.ID) >= MaxWorkspaces {
			return apierr.New(http.StatusBadRequest, apierr.CodeLimitExceeded, "a user has at most %d workspaces besides main", MaxWorkspaces).
				WithDetails(map[string]any{"limit": MaxWorkspaces})
		}
		return tx.PutWorkspace(w)
	})
	if err != nil {
		return h.workspaceError(c, err)
	}
	h.Log.Info("workspace created", append(server.LogAttrs(c), "workspace_id", w.ID)...)
	return c.JSON(http.StatusCreated, workspaceView(w))
}

func (h *handlers) workspaceError(c *echo.Context, err error) error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return h.storeError(c, err)
}

// getWorkspace is GET /v1/workspaces/:id.
func (h *handlers) getWorkspace(c *echo.Context) error {
	w, err := h.pathWorkspace(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, workspaceView(w))
}

// updateWorkspace is PATCH /v1/workspaces/:id. Limits below what the workspace already uses (its
// connected accounts, the posts accepted this month) are refused.
func (h *handlers) updateWorkspace(c *echo.Context) error {
	w, err := h.pathWorkspace(c)
	if err != nil {
		return err
	}
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	if len(o) == 0 {
		return apierr.Validation("nothing to update: send name, approval_required or limits")
	}
	id := w.ID
	month := h.Now().UTC().Format("2006-01")
	ctx, cancel := h.askContext(c)
	defer cancel()
	var next *persistence.Workspace
	err = h.Store.Update(ctx, func(tx *persistence.Tx) error {
		cur, err := tx.Workspace(w.UserID, id)
		if err != nil {
			return err
		}
		n := *cur
		if err := workspaceFields(o, &n, false); err != nil {
			return err
		}
		if l := n.Limits.Accounts; l != nil {
			if used := tx.CountAccounts(n.Scope()); *l < used {
				return apierr.Validation("limits.accounts: the workspace holds %d connected accounts already; disconnect some first or allow at least %d", used, used)
			}
		}
		if l := n.Limits.PostsPerMonth; l != nil {
			if used := tx.Usage(n.Scope(), month).Get(persistence.UsagePostsAccepted, ""); *l < used {
				return apierr.Validation("limits.posts_per_month: the workspace has published or scheduled %d posts in %s already; allow at least %d", used, month, used)
			}
		}
		n.Version++
		next = &n
		return tx.PutWorkspace(&n)
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return apierr.NotFound("workspace")
	}
	if err != nil {
		return h.workspaceError(c, err)
	}
	if h.Auth != nil {
		h.Auth.Invalidate()
	}
	return c.JSON(http.StatusOK, workspaceView(next))
}

// clearBatch bounds the objects one transaction of a workspace's deletion removes.
const clearBatch = 500

// deleteWorkspace is DELETE /v1/workspaces/:id: refused for main, and while the workspace holds
// connected accounts or open posts (scheduled, publishing, waiting for approval): 409. Otherwise
// its webhooks are deleted through their actors (their pending deliveries cancelled), then its
// drafts, finished posts, campaigns and media (the media's bytes by the janitor), then the
// workspace itself; keys bound to it stop working (403).
func (h *handlers) deleteWorkspace(c *echo.Context) error {
	w, err := h.pathWorkspace(c)
	if err != nil {
		return err
	}
	if w.Main() {
		return apierr.Validation("id: the main workspace cannot be deleted")
	}
	scope := w.Scope()
	if err := h.workspaceEmpty(c, scope); err != nil {
		return err
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	if err := h.deleteWorkspaceWebhooks(ctx, c, scope); err != nil {
		return err
	}
	for {
		var done bool
		err := h.Store.Update(ctx, func(tx *persistence.Tx) error {
			if err := occupied(tx, scope); err != nil {
				return err
			}
			var err error
			if done, err = tx.ClearWorkspace(scope, clearBatch); err != nil || !done {
				return err
			}
			if len(tx.WebhooksInKeys(scope)) > 0 {
				done = false // a webhook created meanwhile: deleted on the next round
				return nil
			}
			return tx.DeleteWorkspace(w)
		})
		if err != nil {
			return h.workspaceError(c, err)
		}
		if done {
			break
		}
		if err := h.deleteWorkspaceWebhooks(ctx, c, scope); err != nil {
			return err
		}
	}
	if h.Auth != nil {
		h.Auth.Invalidate()
	}
	h.Log.Info("workspace deleted", append(server.LogAttrs(c), "workspace_id", w.ID)...)
	return c.NoContent(http.StatusNoContent)
}

// occupied is the 409 of a workspace that still holds accounts or open posts.
func occupied(tx *persistence.Tx, scope string) error {
	if n := tx.CountAccounts(scope); n > 0 {
		return apierr.New(http.StatusConflict, apierr.CodeValidation,
			"the workspace holds %d connected accounts; disconnect them (DELETE /v1/accounts/:id) before deleting it", n)
	}
	if n := tx.OpenPosts(scope); n > 0 {
		return apierr.New(http.StatusConflict, apierr.CodeValidation,
			"the workspace has %d posts scheduled, publishing or waiting for approval; let them finish or delete them before deleting it", n)
	}
	return nil
}

func (h *handlers) workspaceEmpty(c *echo.Context, scope string) error {
	err := h.Store.View(func(tx *persistence.Tx) error { return occupied(tx, scope) })
	if err != nil {
		return h.workspaceError(c, err)
	}
	return nil
}

// deleteWorkspaceWebhooks deletes the workspace's webhooks through their actors, as DELETE
// /v1/webhooks/:id does.
func (h *handlers) deleteWorkspaceWebhooks(ctx context.Context, c *echo.Context, scope string) error {
	var ids []string
	if err := h.Store.View(func(tx *persistence.Tx) error {
		ids = tx.WebhooksInKeys(scope)
		return nil
	}); err != nil {
		return h.storeError(c, err)
	}
	if len(ids) > 0 && h.Webhooks == nil {
		return apierr.Unavailable("webhooks cannot be deleted on this server")
	}
	for _, id := range ids {
		_, err := actors.Ask[*webhook.Reply](ctx, h.Webhooks.To.To(id), &webhook.Delete{Scope: scope})
		if err != nil && !errors.Is(err, webhook.ErrNotFound) {
			return h.webhookError(c, err)
		}
	}
	return nil
}

// Usage is a workspace's usage in one month (GET /v1/workspaces/:id/usage).
type Usage struct {
	WorkspaceID string `json:"workspace_id"`
	Month       string `json:"month"`
	// Posts and Targets count outcomes: a post published (any target published) or failed (none
	// published), a target published or failed, per job; a post published again after a failure
	// counts once each way.
	Posts         UsageCounts             `json:"posts"`
	Targets       UsageCounts             `json:"targets"`
	PostsAccepted int                     `json:"posts_accepted"`
	APIRequests   int                     `json:"api_requests"`
	Networks      map[string]NetworkUsage `json:"networks"`
}

// UsageCounts are published and failed counts.
type UsageCounts struct {
	Published int `json:"published"`
	Failed    int `json:"failed"`
}

// NetworkUsage is one network's part of a month's usage.
type NetworkUsage struct {
	Posts   UsageCounts `json:"posts"`
	Targets UsageCounts `json:"targets"`
}

// workspaceUsage is GET /v1/workspaces/:id/usage?month=YYYY-MM (default: this month, UTC).
func (h *handlers) workspaceUsage(c *echo.Context) error {
	w, err := h.pathWorkspace(c)
	if err != nil {
		return err
	}
	month := c.QueryParam("month")
	if month == "" {
		month = h.Now().UTC().Format("2006-01")
	} else if t, err := time.Parse("2006-01", month); err != nil || t.Format("2006-01") != month {
		return apierr.Validation("month: Expected a month as YYYY-MM, received %q", truncate(month, 32))
	}
	var u persistence.Usage
	if err := h.Store.View(func(tx *persistence.Tx) error {
		u = tx.Usage(w.Scope(), month)
		return nil
	}); err != nil {
		return h.storeError(c, err)
	}
	u = h.Server.Requests().Pending(w.Scope(), month, u)
	out := Usage{WorkspaceID: w.ID, Month: month,
		Posts:         UsageCounts{u.Get(persistence.UsagePostsPublished, ""), u.Get(persistence.UsagePostsFailed, "")},
		Targets:       UsageCounts{u.Get(persistence.UsageTargetsPublished, ""), u.Get(persistence.UsageTargetsFailed, "")},
		PostsAccepted: u.Get(persistence.UsagePostsAccepted, ""), APIRequests: u.Get(persistence.UsageAPIRequests, ""),
		Networks: map[string]NetworkUsage{}}
	for _, pf := range u.Platforms() {
		out.Networks[pf] = NetworkUsage{
			Posts:   UsageCounts{u.Get(persistence.UsagePostsPublished, pf), u.Get(persistence.UsagePostsFailed, pf)},
			Targets: UsageCounts{u.Get(persistence.UsageTargetsPublished, pf), u.Get(persistence.UsageTargetsFailed, pf)},
		}
	}
	if wantsCSV(c.Request().Header.Get("Accept")) {
		return usageCSV(c, out, u.Platforms())
	}
	return c.JSON(http.StatusOK, out)
}

// wantsCSV reports whether an Accept header prefers text/csv to JSON (a plain preference order:
// the first of the two it names).
func wantsCSV(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt := strings.ToLower(strings.TrimSpace(strings.Split(part, ";")[0]))
		switch mt {
		case "text/csv":
			return true
		case "application/json", "*/*", "application/*":
			return false
		}
	}
	return false
}

// usageCSV writes a month's usage as CSV: one row per network, then a row "all".
func usageCSV(c *echo.Context, u Usage, networks []string) error {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	_ = cw.Write([]string{"workspace_id", "month", "network", "posts_published", "posts_failed", "targets_published", "targets_failed", "posts_accepted", "api_requests"})
	row := func(network string, n NetworkUsage, accepted, requests string) {
		_ = cw.Write([]string{u.WorkspaceID, u.Month, network, strconv.Itoa(n.Posts.Published), strconv.Itoa(n.Posts.Failed),
			strconv.Itoa(n.Targets.Published), strconv.Itoa(n.Targets.Failed), accepted, requests})
	}
	for _, pf := range networks {
		row(pf, u.Networks[pf], "", "")
	}
	row("all", NetworkUsage{Posts: u.Posts, Targets: u.Targets}, strconv.Itoa(u.PostsAccepted), strconv.Itoa(u.APIRequests))
	cw.Flush()
	c.Response().Header().Set("Content-Disposition", `attachment; filename="herald-usage-`+u.Month+`.csv"`)
	return c.Blob(http.StatusOK, "text/csv; charset=utf-8", b.Bytes())
}

// workspaceRoutes are the workspace operations both doors serve. They need the umbrella scopes
// (service:read, service:write): no narrower OAuth scope covers them.
func (h *handlers) workspaceRoutes() []route {
	return []route{
		{"GET", workspacesPath, h.listWorkspaces, ""},
		{"POST", workspacesPath, h.createWorkspace, ""},
		{"GET", workspacesPath + "/:id", h.getWorkspace, ""},
		{"PATCH", workspacesPath + "/:id", h.updateWorkspace, ""},
		{"DELETE", workspacesPath + "/:id", h.deleteWorkspace, ""},
		{"GET", workspacesPath + "/:id/usage", h.workspaceUsage, ""},
	}
}
