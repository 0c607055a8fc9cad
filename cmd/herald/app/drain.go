package app

import (
	"net/http"
	"time"

	"github.com/heraldhq/herald/http/api"
)

// The drain is the first step of a shutdown (docs/operations.md, Shutdown and crashes). For
// Config.ShutdownDrain (herald serve --shutdown-drain, default 1 s) Herald keeps its listener
// open with /readyz answering 503, so that a load balancer takes it out of rotation, and answers
// every other request with 503 internal_error, Retry-After and Connection: close, before anything
// of it is done. A client on a keep-alive connection thus hears a refusal it can retry safely,
// and the connection then closes cleanly; without the drain, the connections that are idle when
// the HTTP server shuts down are closed under requests that may already be on their way, which
// their clients can only see as a reset, with no way to tell whether the request was served.
//
// Spared: the probes (/healthz, /readyz, /metrics), and the media files that the networks fetch
// by URL for the publishes still in flight (GET of api.MediaFileRoute). The middleware is
// server.RefuseWhile.

// spareWhileDraining keeps the media files that the networks fetch for publishes in flight.
func spareWhileDraining(method, route string) bool {
	return route == api.MediaFileRoute && (method == http.MethodGet || method == http.MethodHead)
}

// drain turns readiness off, refuses new requests, and waits for the drain period.
func (a *App) drain() {
	a.Server.SetReady(false)
	a.draining.Store(true)
	if a.httpSrv != nil && a.Cfg.ShutdownDrain > 0 {
		time.Sleep(a.Cfg.ShutdownDrain)
	}
}
