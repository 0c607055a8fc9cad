package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// PostEvent is one step of the timeline of GET /v1/posts/:id/events.
type PostEvent struct {
	// ID is "{tracking_id}.{seq}.{n}": the job, its change and the event's place in it
	// (seq 0 is the job's creation). Unique, and in timeline order within a job.
	ID string `json:"id"`
	// TrackingID is the job of the step; null for an approval step (approvals.go).
	TrackingID         *string   `json:"tracking_id"`
	Phase              string    `json:"phase"`
	Platform           string    `json:"platform"`
	ConnectedAccountID string    `json:"connected_account_id"`
	Message            string    `json:"message"`
	CreatedAt          time.Time `json:"created_at"`
}

// PostEvents is GET /v1/posts/:id/events.
type PostEvents struct {
	PostID string      `json:"post_id"`
	Events []PostEvent `json:"events"`
}

// postEvents lists the timeline of every publish job of a post, oldest first: each target's
// queued event at the job's creation, then what the job stored as it went (persistence's
// job_events). It reads committed state only: a step is listed once it is durable.
func (h *handlers) postEvents(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	scope := server.Principal(c).Scope()
	out := PostEvents{PostID: id, Events: []PostEvent{}}
	if err := h.Store.View(func(tx *persistence.Tx) error {
		p, err := tx.Post(id)
		if err != nil {
			return err
		}
		if p.Scope() != scope {
			return apierr.Forbidden("post")
		}
		jobs, err := tx.JobsOfPost(id)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			evs, err := tx.JobEvents(j.TrackingID)
			if err != nil {
				return err
			}
			out.Events = appendJobEvents(out.Events, j, evs)
		}
		out.Events = mergeEvents(out.Events, approvalEvents(p))
		return nil
	}); err != nil {
		var ae *apierr.Error
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			return apierr.NotFound("post")
		case errors.As(err, &ae):
			return ae
		}
		return h.storeError(c, err)
	}
	return c.JSON(http.StatusOK, out)
}

func appendJobEvents(out []PostEvent, j *persistence.Job, stored []persistence.JobEventSeq) []PostEvent {
	targets := make(map[int]persistence.JobTarget, len(j.Targets))
	for _, t := range j.Targets {
		targets[t.Target] = t
	}
	id := func(seq uint64, n int) string {
		return j.TrackingID + "." + strconv.FormatUint(seq, 10) + "." + strconv.Itoa(n)
	}
	for n, t := range j.Targets {
		out = append(out, PostEvent{ID: id(0, n), TrackingID: &j.TrackingID, Phase: persistence.EventQueued, Platform: t.Platform,
			ConnectedAccountID: t.AccountID, Message: "queued for " + t.Platform, CreatedAt: j.CreatedAt})
	}
	for _, s := range stored {
		for n, e := range s.Events {
			t := targets[e.Target]
			out = append(out, PostEvent{ID: id(s.Seq, n), TrackingID: &j.TrackingID, Phase: e.Phase, Platform: t.Platform,
				ConnectedAccountID: t.AccountID, Message: e.Message, CreatedAt: e.At})
		}
	}
	return out
}
