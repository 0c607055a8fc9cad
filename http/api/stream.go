package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// JobStreamRoute is the SSE route, exempt from the per-request deadlines.
const JobStreamRoute = "/v1/jobs/:trackingId/stream"

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

// stream serves GET /v1/jobs/:trackingId/stream: progress on every phase change, then done with
// the full job, then the end of the stream. A client that connects to a finished job gets a
// single done; one that connects to a running job gets its current state at once.
func (h *handlers) stream(c *echo.Context) error {
	id, err := parseUUID("trackingId", c.Param("trackingId"))
	if err != nil {
		return err
	}
	sub := job.NewSubscriber(32)
	ctx, cancel := h.askContext(c)
	r, err := actors.Ask[*job.SubscribeReply](ctx, h.Jobs.To(id), &job.Subscribe{UserID: server.Principal(c).User.ID, Sub: sub})
	cancel()
	if err != nil {
		// Nothing of the stream has been written: a plain error response.
		return h.jobError(c, err)
	}
	w := c.Response()
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	hdr.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(w, 1024)
	send := func(name string, id uint64, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		bw.WriteString("event: " + name + "\nid: " + strconv.FormatUint(id, 10) + "\ndata: ")
		bw.Write(b)
		bw.WriteString("\n\n")
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	if r.Done {
		return ignoreClientGone(send("done", r.Job.Seq, jobView(r.Job)))
	}
	unsubscribe := func() {
		h.Jobs.Send(id, &job.Unsubscribe{Sub: sub})
	}
	if err := send("progress", r.Job.Seq, progressOf(r.Job, -1)); err != nil {
		unsubscribe()
		return nil
	}
	ping := time.NewTicker(PingInterval)
	defer ping.Stop()
	done := c.Request().Context().Done()
	for {
		select {
		case e, ok := <-sub.C:
			if !ok {
				// The job dropped a subscriber that fell behind, or passivated: end the
				// stream; the client reconnects and gets the current state.
				return nil
			}
			if e.Name == "done" {
				return ignoreClientGone(send("done", e.ID, jobView(e.Job)))
			}
			if err := send("progress", e.ID, progressOf(e.Job, e.Target)); err != nil {
				unsubscribe()
				return nil
			}
		case <-ping.C:
			bw.WriteString(": ping\n\n")
			if bw.Flush() != nil || rc.Flush() != nil {
				unsubscribe()
				return nil
			}
		case <-done:
			unsubscribe()
			return nil
		}
	}
}

// ignoreClientGone drops write errors: once the stream started there is no response to change.
func ignoreClientGone(error) error { return nil }
