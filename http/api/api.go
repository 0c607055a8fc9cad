// Package api holds Herald's HTTP handlers, their request and response types, and the OpenAPI
// document they implement (openapi.yaml, served as JSON at /v1/openapi.json). Handlers bind and
// validate, ask the owning actor, and map its reply to a response; errors are mapped to the
// spec's codes once, here at the edge.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// Deps are what the handlers need.
type Deps struct {
	Server *server.Server
	Store  *persistence.Store
	Posts  *actors.Directory
	// Accounts is the connected-account directory.
	Accounts *actors.Directory
	Log      *slog.Logger
	Now      func() time.Time
	// AskTimeout bounds the wait for an actor's answer (default 10s).
	AskTimeout time.Duration
}

type handlers struct {
	Deps
}

// Register adds every route to the server.
func Register(d Deps) error {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.AskTimeout <= 0 {
		d.AskTimeout = 10 * time.Second
	}
	h := &handlers{d}
	doc, err := Document()
	if err != nil {
		return err
	}
	e := d.Server.Echo
	e.GET("/v1/openapi.json", func(c *echo.Context) error {
		return c.Blob(http.StatusOK, "application/json", doc)
	})
	v1 := e.Group("/v1", d.Server.Authenticated)
	v1.GET("/me", h.me)
	v1.GET("/accounts", h.listAccounts)
	v1.DELETE("/accounts/:id", h.deleteAccount)
	v1.POST("/posts", h.createPost)
	v1.GET("/posts", h.listPosts)
	v1.GET("/posts/:id", h.getPost)
	v1.PATCH("/posts/:id", h.updatePost)
	v1.DELETE("/posts/:id", h.deletePost)
	return nil
}

// askContext bounds an actor request by the request's context and the ask timeout.
func (h *handlers) askContext(c *echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request().Context(), h.AskTimeout)
}

// actorError maps an actor's error reply to the API's error.
func (h *handlers) actorError(c *echo.Context, what string, err error) error {
	var ne *post.NotEditableError
	switch {
	case errors.Is(err, post.ErrNotFound):
		return apierr.NotFound(what)
	case errors.Is(err, post.ErrForbidden):
		return apierr.Forbidden(what)
	case errors.As(err, &ne):
		return apierr.Validation("%s", ne.Error())
	case errors.Is(err, actors.ErrTimeout):
		h.Log.Warn("actor did not answer in time", "request_id", server.RequestID(c), "what", what)
		return apierr.Unavailable("the server is busy and did not answer in time; retry shortly")
	}
	h.Log.Error("actor request failed", "request_id", server.RequestID(c), "what", what, "error", err)
	return apierr.Internal()
}

func (h *handlers) storeError(c *echo.Context, err error) error {
	h.Log.Error("store read failed", "request_id", server.RequestID(c), "error", err)
	return apierr.Internal()
}
