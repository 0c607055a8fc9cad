package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/ratelimit"
)

// Overload is how the server refuses work beyond what it can do (docs/operations.md, Overload).
//
// Write requests of the API's doors are admitted one slot each out of MaxInflightWrites: a
// request that finds every slot taken waits at most AdmissionWait for one (in arrival order, and
// no more requests wait than there are slots), then is refused with 503 and Retry-After. Its
// body is read before it waits, so a slow client never holds a slot while it sends. The refusal
// comes before the handler runs: nothing of the request is written. Reads, health checks, SSE
// streams and uploads take no slot, so a flood of writes never starves them.
//
// Behind admission, the other refusals of an overloaded server (an actor's full mailbox, a full
// commit queue, a full publishing backlog) are answered the same way, through Overloaded, before
// anything is written.
type Overload struct {
	// MaxInflightWrites bounds the write requests being served at once (default
	// DefaultMaxInflightWrites; negative: no limit).
	MaxInflightWrites int
	// AdmissionWait bounds a write request's wait for a slot (default DefaultAdmissionWait).
	AdmissionWait time.Duration
}

// DefaultAdmissionWait is Overload's AdmissionWait when none is set: long enough to ride out a
// burst, short enough that a refused client learns it at once.
const DefaultAdmissionWait = 50 * time.Millisecond

// DefaultMaxInflightWrites is Overload's MaxInflightWrites when none is set. A durable write
// spends most of its time waiting for a group commit, and 64 writers keep the committer's batches
// full (bench/RESULTS.md: 64 connections create drafts at about half the raw commit ceiling on two
// cores, the rest being CPU); more writers at once add no throughput, only latency (a write waits
// for the commits of those ahead of it) and CPU taken from the work already accepted (the
// overload scenario, bench/RESULTS.md).
const DefaultMaxInflightWrites = 64

// Reasons of an overload refusal, the reason label of herald_http_overload_refused_total.
const (
	OverloadAdmission   = "admission"    // no write slot within AdmissionWait
	OverloadActor       = "actor"        // the actor's mailbox was full
	OverloadCommitQueue = "commit_queue" // the store's commit queue was full
	OverloadJobBacklog  = "job_backlog"  // too many publish jobs in hand
)

// overloadError is a 503 refused for overload, with the reason it is counted under.
type overloadError struct {
	reason string
	err    *apierr.Error
}

func (e *overloadError) Error() string { return e.err.Error() }
func (e *overloadError) Unwrap() error { return e.err }

// Overloaded is the error of a request refused because the server is over capacity: 503
// internal_error with Retry-After, counted by route template and reason (one of the Overload*
// constants). Return it only before anything of the request was written.
func Overloaded(reason, msg string) error {
	return &overloadError{reason: reason, err: apierr.Unavailable(msg)}
}

// admission is the write slots and their short queue.
type admission struct {
	slots   chan struct{}
	waiting atomic.Int64
	wait    time.Duration

	inflight, queued prometheus.GaugeFunc
}

func newAdmission(o Overload) *admission {
	if o.MaxInflightWrites < 0 {
		return nil
	}
	if o.MaxInflightWrites == 0 {
		o.MaxInflightWrites = DefaultMaxInflightWrites
	}
	if o.AdmissionWait <= 0 {
		o.AdmissionWait = DefaultAdmissionWait
	}
	a := &admission{slots: make(chan struct{}, o.MaxInflightWrites), wait: o.AdmissionWait}
	a.inflight = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_http_writes_in_flight", Help: "Write requests holding an admission slot.",
	}, func() float64 { return float64(len(a.slots)) })
	a.queued = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_http_writes_waiting", Help: "Write requests waiting for an admission slot.",
	}, func() float64 { return float64(a.waiting.Load()) })
	return a
}

// acquire takes a slot, waiting at most a.wait (and not at all when as many requests wait as
// there are slots); false means refused.
func (a *admission) acquire(done <-chan struct{}) bool {
	select {
	case a.slots <- struct{}{}:
		return true
	default:
	}
	if a.waiting.Add(1) > int64(cap(a.slots)) {
		a.waiting.Add(-1)
		return false
	}
	defer a.waiting.Add(-1)
	t := time.NewTimer(a.wait)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-done:
	}
	return false
}

func (a *admission) release() { <-a.slots }

// AdmitWrite is the middleware of the doors' write routes: the request's body is read, then it
// takes a write slot (Overload) or is refused with 503 before its handler runs.
func (s *Server) AdmitWrite(next echo.HandlerFunc) echo.HandlerFunc {
	if s.admission == nil {
		return next
	}
	return func(c *echo.Context) error {
		r := c.Request()
		if r.Body != nil && r.ContentLength != 0 { // 0: no body (-1: chunked, unknown length)
			// limits caps the body; a read error is the handler's to report as it would.
			raw, err := io.ReadAll(r.Body)
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return err
			}
			if err != nil {
				return apierr.Validation("could not read the request body")
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
		}
		if !s.admission.acquire(r.Context().Done()) {
			return Overloaded(OverloadAdmission, "the server is at capacity for write requests; retry shortly")
		}
		defer s.admission.release()
		return next(c)
	}
}

// keyQuota holds the quota a request took (Authenticated), so that a refusal for overload gives
// it back.
const keyQuota = "herald.quota"

type quotaTaken struct {
	user, plan string
	d          ratelimit.Decision
	reset      int
}

// countOverload reports whether err refused the request for overload; if so it counts it under
// its route template and reason, and gives back the request it took from the plan's hourly
// quota: a request the server refused for its own load is not the client's to pay for (its
// RateLimit headers say so). Refusals are logged in one warning a minute at most, with their
// count, rather than one line each.
func (s *Server) countOverload(c *echo.Context, err error) bool {
	var oe *overloadError
	if err == nil || !errors.As(err, &oe) {
		return false
	}
	route := routeLabel(c)
	s.overloadRefused.WithLabelValues(route, oe.reason).Inc()
	if q, ok := c.Get(keyQuota).(quotaTaken); ok {
		s.cfg.Limiter.Return(q.user)
		setRateLimitHeaders(c.Response().Header(), q.plan, q.d.Limit, q.d.Remaining+1, q.reset)
	}
	n := s.shed.Add(1)
	now := time.Now().UnixNano()
	if last := s.shedLogged.Load(); now-last >= int64(time.Minute) && s.shedLogged.CompareAndSwap(last, now) {
		s.shed.Add(-n)
		s.cfg.Log.Warn("refusing requests: the server is over capacity (503 with Retry-After); refused counts them since the last such line, herald_http_overload_refused_total by route and reason",
			append(LogAttrs(c), "refused", n, "route", route, "reason", oe.reason)...)
	}
	return true
}
