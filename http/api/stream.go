package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// Progress is the data of a progress event.
type Progress struct {
	Status    string `json:"status"`
	Phase     string `json:"phase"`
	Platform  string `json:"platform"`
	Message   string `json:"message"`
	Completed int    `json:"completed"`
	Failed    int    `json:"failed"`
	Total     int    `json:"total"`
}

func progressOf(j *persistence.Job, target int) Progress {
	completed, failed := j.Counts()
	p := Progress{Status: j.Status, Completed: completed, Failed: failed, Total: len(j.Targets)}
	var t *persistence.JobTarget
	for i := range j.Targets {
		if j.Targets[i].Target == target {
			t = &j.Targets[i]
		}
	}
	if t == nil && len(j.Targets) > 0 {
		// The current state: the first target still open, else the last.
		t = &j.Targets[len(j.Targets)-1]
		for i := range j.Targets {
			if !j.Targets[i].Final() {
				t = &j.Targets[i]
				break
			}
		}
	}
	if t != nil {
		p.Phase, p.Platform, p.Message = t.Phase, t.Platform, t.Message
	}
	return p
}

// render gives the wire form of a job event, built once for every subscriber.
func render(e *job.Event) ([]byte, error) {
	return e.Render(func() ([]byte, error) {
		if e.Name == "done" {
			return eventBytes("done", e.ID, jobView(e.Job))
		}
		return eventBytes("progress", e.ID, progressOf(e.Job, e.Target))
	})
}

// stream serves GET /v1/jobs/:trackingId/stream (and /api/jobs/:trackingId/stream): progress on every phase change, then done with
// the full job, then the end of the stream. A client that connects to a finished job gets a
// single done; one that connects to a running job gets its current state at once.
//
// Once the first event is written, the connection is taken over from the HTTP server (hijacked)
// and served by a small goroutine of its own, so that an open stream costs a few kilobytes and
// not a request's whole stack and buffers; its body ends with the connection.
func (h *handlers) stream(c *echo.Context) error {
	id, err := parseUUID("trackingId", c.Param("trackingId"))
	if err != nil {
		return err
	}
	user := server.Principal(c).Scope()
	j, done, sub, unsubscribe, err := h.feeds.join(id, user)
	if err != nil {
		unsubscribe()
		// Nothing of the stream has been written: a plain error response.
		if err == job.ErrNotFound || err == job.ErrForbidden {
			return h.jobError(c, err)
		}
		return h.storeError(c, err)
	}
	// A finished job's single done is no stream: only a running job's counts against the caps.
	if !done {
		if err := h.Streams.add(user, "Herald is shutting down; reconnect to follow the job"); err != nil {
			unsubscribe()
			return err
		}
	}
	w := c.Response()
	sseHeaders(w.Header())
	var first []byte
	if done {
		first, err = eventBytes("done", j.Seq, jobView(j))
	} else {
		first, err = eventBytes("progress", j.Seq, progressOf(j, -1))
	}
	if err != nil {
		unsubscribe()
		if !done {
			h.Streams.done(user)
		}
		return err
	}
	if done {
		unsubscribe()
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(first)
		return nil
	}
	// The stream lives as long as the credential that opened it: revoking, regenerating or the
	// expiry of the key ends it (auth.Hold), as signing out or a password change ends a
	// session's (session.Manager.Hold).
	held, release := h.hold(c)
	s, err := hijackSSE(w, h.streams)
	if err != nil {
		// HTTP/2 and other transports that cannot be taken over: serve the stream in place.
		defer h.Streams.done(user)
		defer release()
		return h.streamInPlace(c, sub, first, unsubscribe, held)
	}
	if !s.writeHead(w.Header(), first) {
		s.close()
		unsubscribe()
		release()
		h.Streams.done(user)
		return nil
	}
	go h.serveStream(s, user, sub, unsubscribe, held, release)
	return nil
}

// hold ties a stream to the request's credential (auth.Hold), or to its session on the
// dashboard's door (session.Manager.Hold): the stream ends with either.
func (h *handlers) hold(c *echo.Context) (context.Context, func()) {
	if s := server.Session(c); s != nil {
		if m := h.Server.Sessions(); m != nil {
			return m.Hold(s)
		}
		return context.Background(), func() {}
	}
	if h.Auth == nil {
		return context.Background(), func() {}
	}
	return h.Auth.Hold(server.Principal(c))
}

// serveStream serves a hijacked stream until it ends (follow), then closes its connection.
func (h *handlers) serveStream(s *sseWriter, user string, sub *job.Subscriber, unsubscribe func(), held context.Context, release func()) {
	defer h.Streams.done(user)
	defer release()
	defer s.close()
	gone, stop := hangups().watch(s.conn)
	defer stop() // before the connection closes
	s.open(gone, held, h.Streams.Closing())
	h.follow(s, sub, unsubscribe)
}

// streamInPlace serves a stream within the request, where the connection cannot be taken over.
func (h *handlers) streamInPlace(c *echo.Context, sub *job.Subscriber, first []byte, unsubscribe func(), held context.Context) error {
	w := c.Response()
	w.WriteHeader(http.StatusOK)
	s := newSSE(w, h.streams)
	defer s.close()
	if !s.write(first) {
		unsubscribe()
		return nil
	}
	s.open(c.Request().Context().Done(), held, h.Streams.Closing())
	h.follow(s, sub, unsubscribe)
	return nil
}

// follow writes a job stream's events until done, the client leaves, the feed drops it, or the
// credential that opened it stops working; at shutdown, or when the feed drops it, the stream ends
// with the farewell (streams.go).
func (h *handlers) follow(s *sseWriter, sub *job.Subscriber, unsubscribe func()) {
	defer unsubscribe()
	for {
		e, ok, live := sseNext(s, sub.C)
		if !live {
			unsubscribe()
			return
		}
		if !ok {
			s.dropped()
			s.farewell()
			return
		}
		// Events already waiting go out in the same write (the last progress and done
		// usually arrive together): one system call instead of several per subscriber.
		batch := []*job.Event{e}
	more:
		for len(batch) < 8 && e.Name != "done" {
			select {
			case next, ok := <-sub.C:
				if !ok {
					break more
				}
				batch = append(batch, next)
				e = next
			default:
				break more
			}
		}
		var out []byte
		for _, ev := range batch {
			b, err := render(ev)
			if err != nil {
				s.dropped()
				unsubscribe()
				return
			}
			out = append(out, b...)
		}
		if !s.events(out, len(batch)) {
			unsubscribe()
			return
		}
		if e.Name == "done" {
			return
		}
	}
}
