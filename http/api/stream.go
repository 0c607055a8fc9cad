package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// PingInterval is how often an idle stream sends a comment, so that proxies keep it open.
var PingInterval = 15 * time.Second

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

// streamMetrics count the open streams.
type streamMetrics struct {
	open    prometheus.Gauge
	sent    prometheus.Counter
	dropped prometheus.Counter
	revoked prometheus.Counter
}

func newStreamMetrics(reg prometheus.Registerer) *streamMetrics {
	m := &streamMetrics{
		open:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_sse_subscribers", Help: "Open job and campaign streams."}),
		sent:    prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_sse_events_total", Help: "Events written to job and campaign streams."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_sse_dropped_total", Help: "Job and campaign streams ended because the client went away or fell behind."}),
		revoked: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_sse_revoked_total", Help: "Job and campaign streams ended because the key that opened them was revoked, regenerated or expired, or the dashboard session that opened them ended."}),
	}
	if reg != nil {
		reg.MustRegister(m.open, m.sent, m.dropped, m.revoked)
	}
	return m
}

// eventBytes renders one event in the stream's wire form.
func eventBytes(name string, id uint64, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(b) + 48)
	buf.WriteString("event: " + name + "\nid: " + strconv.FormatUint(id, 10) + "\ndata: ")
	buf.Write(b)
	buf.WriteString("\n\n")
	return buf.Bytes(), nil
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
	user := server.Principal(c).User.ID
	sub := job.NewSubscriber(32)
	r, err := ask[*job.SubscribeReply](h, c, h.Jobs.To(id), &job.Subscribe{UserID: user, Sub: sub})
	if err != nil {
		// Nothing of the stream has been written: a plain error response.
		return h.jobError(c, err)
	}
	// A finished job's single done is no stream: only a running job's counts against the caps.
	if !r.Done {
		if err := h.Streams.add(user, "Herald is shutting down; reconnect to follow the job"); err != nil {
			h.Jobs.Send(id, &job.Unsubscribe{Sub: sub})
			return err
		}
	}
	w := c.Response()
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	var first []byte
	if r.Done {
		first, err = eventBytes("done", r.Job.Seq, jobView(r.Job))
	} else {
		first, err = eventBytes("progress", r.Job.Seq, progressOf(r.Job, -1))
	}
	if err != nil {
		if !r.Done {
			h.Jobs.Send(id, &job.Unsubscribe{Sub: sub})
			h.Streams.done(user)
		}
		return err
	}
	if r.Done {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(first)
		return nil
	}
	unsubscribe := func() { h.Jobs.Send(id, &job.Unsubscribe{Sub: sub}) }
	// The stream lives as long as the credential that opened it: revoking, regenerating or the
	// expiry of the key ends it (auth.Hold), as signing out or a password change ends a
	// session's (session.Manager.Hold).
	held, release := h.hold(c)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 and other transports that cannot be taken over: serve the stream in place.
		defer h.Streams.done(user)
		defer release()
		return h.streamInPlace(c, sub, first, unsubscribe, held)
	}
	hdr.Set("Connection", "close")
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	_ = hdr.Write(&head)
	head.WriteString("\r\n")
	head.Write(first)
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(head.Bytes()); err != nil {
		_ = conn.Close()
		unsubscribe()
		release()
		h.Streams.done(user)
		return nil
	}
	h.streams.open.Inc()
	go h.serveStream(conn, user, sub, unsubscribe, held, release)
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

// endedBytes is the comment a stream ends with when its credential stops working: clients ignore
// comments, a person reading the stream sees why it ended, and a client that reconnects gets the
// 401 that says so.
func endedBytes(held context.Context) []byte {
	reason := "the credential no longer authenticates"
	if cause := context.Cause(held); cause != nil {
		reason = cause.Error()
	}
	return []byte(": " + strings.ReplaceAll(reason, "\n", " ") + "; the stream ends\n\n")
}

// serveStream writes a hijacked stream's events until done, the client leaves, the job drops it,
// or the credential that opened it stops working (held ends); at shutdown, or when the job drops
// it, the stream ends with the farewell (streams.go).
func (h *handlers) serveStream(conn net.Conn, user string, sub *job.Subscriber, unsubscribe func(), held context.Context, release func()) {
	defer h.Streams.done(user)
	defer h.streams.open.Dec()
	defer release()
	defer conn.Close()
	gone, stop := hangups().watch(conn)
	defer stop() // before the connection closes
	ping := time.NewTicker(PingInterval)
	defer ping.Stop()
	write := func(b []byte) bool {
		_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err := conn.Write(b)
		return err == nil
	}
	for {
		select {
		case e, ok := <-sub.C:
			if !ok {
				h.streams.dropped.Inc()
				farewellTo(conn)
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
					h.streams.dropped.Inc()
					unsubscribe()
					return
				}
				out = append(out, b...)
			}
			if !write(out) {
				h.streams.dropped.Inc()
				unsubscribe()
				return
			}
			h.streams.sent.Add(float64(len(batch)))
			if e.Name == "done" {
				return
			}
		case <-ping.C:
			if !write(pingBytes) {
				h.streams.dropped.Inc()
				unsubscribe()
				return
			}
		case <-gone:
			h.streams.dropped.Inc()
			unsubscribe()
			return
		case <-held.Done():
			_ = write(endedBytes(held))
			h.streams.revoked.Inc()
			unsubscribe()
			return
		case <-h.Streams.Closing():
			unsubscribe()
			farewellTo(conn)
			return
		}
	}
}

// farewellTo ends a hijacked stream with the farewell, giving a client that does not read a
// second at most.
func farewellTo(conn net.Conn) {
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = conn.Write(farewell)
}

var pingBytes = []byte(": ping\n\n")

// streamInPlace serves a stream within the request, where the connection cannot be taken over.
func (h *handlers) streamInPlace(c *echo.Context, sub *job.Subscriber, first []byte, unsubscribe func(), held context.Context) error {
	w := c.Response()
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(first) {
		unsubscribe()
		return nil
	}
	h.streams.open.Inc()
	defer h.streams.open.Dec()
	ping := time.NewTicker(PingInterval)
	defer ping.Stop()
	done := c.Request().Context().Done()
	for {
		select {
		case e, ok := <-sub.C:
			if !ok {
				_ = write(farewell)
				return nil
			}
			b, err := render(e)
			if err != nil || !write(b) {
				unsubscribe()
				return nil
			}
			if e.Name == "done" {
				return nil
			}
		case <-ping.C:
			if !write(pingBytes) {
				unsubscribe()
				return nil
			}
		case <-done:
			unsubscribe()
			return nil
		case <-held.Done():
			_ = write(endedBytes(held))
			h.streams.revoked.Inc()
			unsubscribe()
			return nil
		case <-h.Streams.Closing():
			unsubscribe()
			_ = write(farewell)
			return nil
		}
	}
}
