package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// User is the response of GET /v1/me (and of the dashboard's GET /api/me, with api_key null).
type User struct {
	ID        string     `json:"id"`
	Email     string     `json:"email"`
	Name      *string    `json:"name"`
	Image     *string    `json:"image"`
	Plan      string     `json:"plan"`
	Timezone  string     `json:"timezone"`
	CreatedAt *time.Time `json:"created_at"`
	APIKey    *KeyRef    `json:"api_key"`
	// WorkspaceID is the workspace the request acted in (GET /v1/me and /api/me only).
	WorkspaceID string `json:"workspace_id,omitempty"`
}

// KeyRef names the API key of the request, with its limits: the scopes it is limited to (null:
// full access) and the workspace it is bound to (null: every workspace).
type KeyRef struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Prefix      string   `json:"prefix"`
	Scopes      []string `json:"scopes"`
	WorkspaceID *string  `json:"workspace_id"`
}

func (h *handlers) me(c *echo.Context) error {
	p := server.Principal(c)
	var u *persistence.User
	err := h.Store.View(func(tx *persistence.Tx) error {
		var err error
		u, err = tx.User(p.User.ID)
		return err
	})
	if errors.Is(err, persistence.ErrNotFound) {
		return apierr.NotFound("user")
	}
	if err != nil {
		return h.storeError(c, err)
	}
	out := userView(u)
	out.WorkspaceID = p.WorkspaceID
	if p.Key != nil { // nil on the dashboard's GET /api/me: a session, not a key
		out.APIKey = &KeyRef{ID: p.Key.ID, Name: p.Key.Name, Prefix: p.Key.Prefix, Scopes: p.Key.Scopes}
		if p.Key.WorkspaceID != "" {
			ws := p.Key.WorkspaceID
			out.APIKey.WorkspaceID = &ws
		}
		if p.OAuth() {
			out.APIKey.Scopes = p.Scopes // a token's scopes are its grant's
		}
	}
	return c.JSON(http.StatusOK, out)
}
