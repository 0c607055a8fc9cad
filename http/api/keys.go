package api

import (
	"bytes"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// The dashboard's API keys (the spec's "Developer, API keys"): a person lists, creates, renames,
// regenerates and revokes their own keys on the session. Only the dashboard's door has these
// routes: a key cannot mint keys. They run http/auth's management functions, the ones `herald
// keys` and the admin socket run, scoped to the session's user; another user's key is 403
// forbidden, as another user's account or webhook is on /v1, and an unknown id 404 not_found.
//
//	GET    /api/keys                  → 200 {data: [{id, name, prefix, created_at, expires_at, last_used_at, revoked_at}]}
//	POST   /api/keys                  {name, expires_in_days?, workspace_id?, scopes?} → 201 {id, name, prefix, key, created_at, expires_at, scopes, workspace_id}
//	PATCH  /api/keys/:id              {name} → 200 the key as listed
//	POST   /api/keys/:id/regenerate   → 200 {id, name, prefix, key, created_at, expires_at}; the old secret is refused at once
//	DELETE /api/keys/:id              → 204; the key is refused at once (it stays listed, revoked)
//
// The raw key is in the answer of create and regenerate only; Herald keeps its SHA-256. A key may
// be bound to one workspace (workspace_id: "main" or a workspace's id) and limited to scopes
// (auth.KeyScopes: the OAuth scope names and posts:approve); without them it has full access to
// every workspace, as the spec's keys do.

// MaxKeyExpiryDays is the longest expiry a key can be given, in days.
const MaxKeyExpiryDays = 3650

// registerKeys adds the key routes to the dashboard's group.
func (h *handlers) registerKeys(g *echo.Group) {
	g.GET("/keys", h.listKeys)
	g.POST("/keys", h.createKey)
	g.PATCH("/keys/:id", h.renameKey)
	g.POST("/keys/:id/regenerate", h.regenerateKey)
	g.DELETE("/keys/:id", h.revokeKey)
}

// keyError maps a refused key operation.
func (h *handlers) keyError(c *echo.Context, err error) error {
	switch {
	case errors.Is(err, auth.ErrForeignKey):
		return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "the key belongs to another user") // keys are the user's, not a workspace's
	case errors.Is(err, auth.ErrNoKey):
		return apierr.NotFound("key")
	case errors.Is(err, auth.ErrInvalid):
		return apierr.Validation("%s", strings.TrimPrefix(err.Error(), auth.ErrInvalid.Error()+": "))
	}
	return h.storeError(c, err)
}

// keysChanged drops the authenticator's cache, so that the next request with a revoked or
// regenerated key is refused and /v1/me names a renamed key by its new name.
func (h *handlers) keysChanged() {
	if h.Auth != nil {
		h.Auth.Invalidate()
	}
}

// listKeys is GET /api/keys: the user's keys, oldest first, revoked ones included.
func (h *handlers) listKeys(c *echo.Context) error {
	keys, err := auth.ListUserKeys(h.Store, server.Principal(c).User.ID)
	if err != nil {
		return h.storeError(c, err)
	}
	if h.Auth != nil {
		keys = h.Auth.WithUse(keys)
	}
	return c.JSON(http.StatusOK, map[string]any{"data": keys})
}

// keyNameField reads the required name of a key.
func keyNameField(o object) (string, error) {
	n, err := o.str("name", true)
	if err != nil {
		return "", err
	}
	name, err := auth.KeyName(*n)
	if err != nil {
		return "", apierr.Validation("name: %s", strings.TrimPrefix(err.Error(), auth.ErrInvalid.Error()+": "))
	}
	return name, nil
}

// keyLimitFields reads a new key's workspace_id and scopes.
func keyLimitFields(o object) (auth.KeyLimits, error) {
	var l auth.KeyLimits
	ws, err := o.str("workspace_id", false)
	if raw, ok := o["workspace_id"]; ok && jsonType(raw) == "null" {
		ws, err = nil, nil
	}
	if err != nil {
		return l, err
	}
	if ws != nil {
		id := strings.TrimSpace(*ws)
		if id != persistence.MainWorkspace {
			if id, err = parseUUID("workspace_id", id); err != nil {
				return l, apierr.Validation("workspace_id: Expected \"main\" or a workspace's id")
			}
		}
		l.WorkspaceID = id
	}
	raw, ok := o["scopes"]
	if !ok || jsonType(raw) == "null" {
		return l, nil
	}
	if jsonType(raw) != "array" {
		return l, typeError("scopes", "array", raw)
	}
	for i, it := range splitArray(raw) {
		if jsonType(it) != "string" {
			return l, apierr.Validation("scopes.%d: Expected string, received %s", i, jsonType(it))
		}
		sc, _ := unquote(it)
		if !slices.Contains(auth.KeyScopes, sc) {
			return l, apierr.Validation("scopes.%d: Invalid enum value. Expected %s, received '%s'", i, strings.Join(auth.KeyScopes, " | "), truncate(sc, 64))
		}
		l.Scopes = append(l.Scopes, sc)
	}
	if len(l.Scopes) == 0 {
		return l, apierr.Validation("scopes: Array must contain at least 1 element(s); omit it for a key with full access")
	}
	return l, nil
}

// createKey is POST /api/keys {name, expires_in_days?}.
func (h *handlers) createKey(c *echo.Context) error {
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	name, err := keyNameField(o)
	if err != nil {
		return err
	}
	var expiresIn time.Duration
	if raw, ok := o["expires_in_days"]; ok && string(bytes.TrimSpace(raw)) != "null" {
		days, err := o.integer("expires_in_days")
		if err != nil {
			return err
		}
		if days < 1 || days > MaxKeyExpiryDays {
			return apierr.Validation("expires_in_days: Number must be from 1 to %d (omit it for a key that does not expire)", MaxKeyExpiryDays)
		}
		expiresIn = time.Duration(days) * 24 * time.Hour
	}
	limits, err := keyLimitFields(o)
	if err != nil {
		return err
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	k, err := auth.CreateLimitedKey(ctx, h.Store, server.Principal(c).User.ID, name, expiresIn, limits, h.Now())
	if err != nil {
		return h.keyError(c, err)
	}
	h.Log.Info("API key created", append(server.LogAttrs(c), "key_id", k.ID)...)
	return c.JSON(http.StatusCreated, k)
}

// renameKey is PATCH /api/keys/:id {name}.
func (h *handlers) renameKey(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	o, err := readObject(c.Request())
	if err != nil {
		return err
	}
	name, err := keyNameField(o)
	if err != nil {
		return err
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	k, err := auth.RenameKey(ctx, h.Store, server.Principal(c).User.ID, id, name)
	if err != nil {
		return h.keyError(c, err)
	}
	h.keysChanged()
	out := []auth.KeyInfo{*k}
	if h.Auth != nil {
		out = h.Auth.WithUse(out)
	}
	return c.JSON(http.StatusOK, out[0])
}

// regenerateKey is POST /api/keys/:id/regenerate.
func (h *handlers) regenerateKey(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	k, err := auth.RegenerateUserKey(ctx, h.Store, server.Principal(c).User.ID, id)
	if err != nil {
		return h.keyError(c, err)
	}
	h.keysChanged()
	h.Log.Info("API key regenerated", append(server.LogAttrs(c), "key_id", k.ID)...)
	return c.JSON(http.StatusOK, k)
}

// revokeKey is DELETE /api/keys/:id. Revoking a revoked key is 204 again.
func (h *handlers) revokeKey(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	ctx, cancel := h.askContext(c)
	defer cancel()
	if _, err := auth.RevokeUserKey(ctx, h.Store, server.Principal(c).User.ID, id, h.Now()); err != nil {
		return h.keyError(c, err)
	}
	h.keysChanged()
	h.Log.Info("API key revoked", append(server.LogAttrs(c), "key_id", id)...)
	return c.NoContent(http.StatusNoContent)
}
