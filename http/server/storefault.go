package server

import (
	"context"
	"errors"
	"log/slog"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/persistence"
)

// storeFailureMessage is what a client is told of a write the store could not commit.
const storeFailureMessage = "Herald could not store the change: its storage cannot write right now (disk full or I/O error); " +
	"nothing was saved, retry shortly"

// StoreFailure answers a request whose write the store could not commit (an error wrapping
// persistence.ErrWriteFailed: disk full, I/O error) with 503 internal_error and Retry-After, and
// logs it; it returns nil for any other error. Nothing of such a request was kept or acknowledged,
// so the client may send it again as it is; Herald takes writes again as soon as its storage does,
// without a restart.
func StoreFailure(c *echo.Context, log *slog.Logger, err error) *apierr.Error {
	if errors.Is(err, persistence.ErrUnavailable) {
		// A read the store's database could not answer (PostgreSQL down or failing over).
		log.Warn("request refused: the store's database cannot be reached", append(LogAttrs(c), "error", err)...)
		return apierr.Unavailable("Herald cannot reach its database right now; nothing was changed, retry shortly")
	}
	if errors.Is(err, persistence.ErrFenced) {
		// Several nodes: the object's shard moved to another node between the routing and the
		// write, which the write's fence refused.
		log.Info("write refused: the object's shard moved to another node", append(LogAttrs(c), "error", err)...)
		return apierr.Unavailable("the object moved to another Herald node while the request was served; nothing was changed, retry shortly")
	}
	if !errors.Is(err, persistence.ErrWriteFailed) {
		return nil
	}
	log.Warn("write refused: the store could not commit it", append(LogAttrs(c), "error", err)...)
	return apierr.Unavailable(storeFailureMessage)
}

// ReadyCheck reports whether the server can do its work beyond having started: nil when it can,
// else why not, in words safe to show (Herald's: whether its store can write).
type ReadyCheck func(ctx context.Context) error

// checkReady runs the configured readiness check; its failure is /readyz's 503.
func (s *Server) checkReady(c *echo.Context) error {
	if s.cfg.Ready == nil {
		return nil
	}
	if err := s.cfg.Ready(c.Request().Context()); err != nil {
		return apierr.Unavailable(err.Error())
	}
	return nil
}

// ClusterUnavailable is the answer to a request whose actor lives on another node that could not
// be reached (cluster.ErrUnavailable: its shard is moving, or the node is cut off or slow): 503
// internal_error with Retry-After, the spec's retriable answer. what names the object.
func ClusterUnavailable(c *echo.Context, log *slog.Logger, what string) *apierr.Error {
	log.Warn("the node that owns the object could not be reached", append(LogAttrs(c), "what", what)...)
	return apierr.Unavailable("the " + what + " is kept by another Herald node that cannot be reached right now; retry shortly")
}
