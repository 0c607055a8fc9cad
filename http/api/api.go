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
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/campaign"
	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/actors/webhook"
	"github.com/heraldhq/herald/cluster"
	"github.com/heraldhq/herald/http/accountlink"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/live"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
	"github.com/heraldhq/herald/platforms"
)

// Deps are what the handlers need.
type Deps struct {
	Server *server.Server
	Store  *persistence.Store
	Posts  actors.Router
	// Accounts is the connected-account directory.
	Accounts actors.Router
	// Connect runs the account connect flow (POST /v1/accounts/connect and its browser routes).
	Connect *accountlink.Service
	// Jobs is the publish job directory.
	Jobs actors.Router
	// Auth is the API-key authenticator: the dashboard's key routes (keys.go) drop its cache
	// after a change and read the keys' noted uses.
	Auth *auth.Authenticator
	// Registry receives the handlers' own metrics (nil: unregistered).
	Registry prometheus.Registerer
	// FreePostQuota is the free plan's posts per calendar month (0: unlimited).
	FreePostQuota int
	Log           *slog.Logger
	Now           func() time.Time
	// AskTimeout bounds the wait for an actor's answer (default 10s).
	AskTimeout time.Duration
	// Media is the media flow behind the /v1/media routes (media.go).
	Media *blob.Service
	// Webhooks is the webhook service (subscription actors and the URL guard).
	Webhooks *webhook.Service
	// Live serves analytics and the inbox (live.go).
	Live *live.Service
	// Campaigns is the campaign directory; CampaignHub wakes the campaign streams.
	Campaigns   actors.Router
	CampaignHub *campaign.Hub
	// Adapters check each network's own rules on a campaign's posts before anything is stored
	// (nil: only Herald's own rules are checked).
	Adapters map[platforms.Platform]platforms.Adapter
	// Cards reads the pages of link cards for POST /v1/posts/validate (nil: not read; no other
	// door reads a page).
	Cards platforms.CardReader
	// Streams are the open job streams, which a shutdown ends (streams.go; nil: a set of the
	// handlers' own).
	Streams *Streams
	// JobBacklog counts the publish jobs in hand; publish requests are refused with 503 while it
	// is full (nil: no limit).
	JobBacklog *job.Backlog
}

type handlers struct {
	Deps
	idem    *inflight
	streams *streamMetrics
	feeds   *jobFeeds // the readers of the jobs streamed (jobfeed.go)
}

// Register adds every route to the server.
func Register(d Deps) error {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.AskTimeout <= 0 {
		d.AskTimeout = 10 * time.Second
	}
	if d.Streams == nil {
		d.Streams = NewStreams(0)
	}
	h := &handlers{Deps: d, idem: &inflight{keys: map[string]bool{}}, streams: newStreamMetrics(d.Registry), feeds: newJobFeeds(d.Store, d.Log)}
	doc, err := Document()
	if err != nil {
		return err
	}
	e := d.Server.Echo
	e.GET("/v1/openapi.json", func(c *echo.Context) error {
		return c.Blob(http.StatusOK, "application/json", doc)
	})
	mount(e.Group(V1Prefix, d.Server.Authenticated), d.Server, h.routes(), true)
	h.registerConnect(e)
	h.registerMedia(e)
	h.registerApprovalPage(e)
	if d.Server.Sessions() != nil {
		dash := e.Group(DashboardPrefix, d.Server.SecurityHeaders, d.Server.SessionAuth, requireRole)
		mount(dash, d.Server, h.routes(), false)
		h.registerKeys(dash)
		h.registerCredentials(dash)
		h.registerMembers(dash, e)
		h.registerDashboard(e)
	}
	return nil
}

// ask sends an actor a request on behalf of the HTTP request: bounded by the request's context
// and the ask timeout.
func ask[R any](h *handlers, c *echo.Context, to actors.Requester, msg any) (R, error) {
	return actors.AskWithin[R](c.Request().Context(), h.AskTimeout, to, msg)
}

// askContext bounds other calls (not actor requests) by the request's context and the ask
// timeout.
func (h *handlers) askContext(c *echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request().Context(), h.AskTimeout)
}

// actorError maps an actor's error reply to the API's error.
func (h *handlers) actorError(c *echo.Context, what string, err error) error {
	var ne *post.NotEditableError
	var ie *post.InvalidError
	if e := server.StoreFailure(c, h.Log, err); e != nil {
		return e
	}
	switch {
	case errors.As(err, &ie):
		return apierr.Validation("%s", ie.Error())
	case errors.Is(err, post.ErrNotFound):
		return apierr.NotFound(what)
	case errors.Is(err, post.ErrForbidden):
		return apierr.Forbidden(what)
	case errors.As(err, &ne):
		return apierr.Validation("%s", ne.Error())
	case errors.Is(err, actors.ErrTimeout):
		h.Log.Warn("actor did not answer in time", append(server.LogAttrs(c), "what", what)...)
		return apierr.Unavailable("the server is busy and did not answer in time; retry shortly")
	case errors.Is(err, cluster.ErrUnavailable):
		return server.ClusterUnavailable(c, h.Log, what)
	case errors.Is(err, actors.ErrBusy):
		return server.Overloaded(server.OverloadActor, "the "+what+" is too busy to take the request; nothing was changed; retry shortly")
	case errors.Is(err, persistence.ErrBusy):
		return server.Overloaded(server.OverloadCommitQueue, "the server is at capacity for writes; nothing was changed; retry shortly")
	case errors.Is(err, persistence.ErrIdempotencyKeyUsed):
		return errKeyAnswered // publishFlow answers with the key's stored answer
	}
	h.Log.Error("actor request failed", append(server.LogAttrs(c), "what", what, "error", err)...)
	return apierr.Internal()
}

// storeError maps a failed store operation: a write the store could not commit is 503 (nothing was
// kept, the client may retry), anything else 500.
func (h *handlers) storeError(c *echo.Context, err error) error {
	if e := server.StoreFailure(c, h.Log, err); e != nil {
		return e
	}
	h.Log.Error("store operation failed", append(server.LogAttrs(c), "error", err)...)
	return apierr.Internal()
}
