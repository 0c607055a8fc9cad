package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/job"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// PlatformStatus is one target of a job: its latest phase.
type PlatformStatus struct {
	Platform           string `json:"platform"`
	ConnectedAccountID string `json:"connected_account_id"`
	Phase              string `json:"phase"`
	Message            string `json:"message"`
}

// Job is a publish job as the API shows it.
type Job struct {
	TrackingID       string           `json:"tracking_id"`
	PostID           string           `json:"post_id"`
	Status           string           `json:"status"`
	Total            int              `json:"total"`
	Completed        int              `json:"completed"`
	Failed           int              `json:"failed"`
	PlatformStatuses []PlatformStatus `json:"platform_statuses"`
	CreatedAt        time.Time        `json:"created_at"`
	CompletedAt      *time.Time       `json:"completed_at"`
	// Errors lists the failed targets; FailureReason sums them up in one line (null when none
	// failed).
	Errors        []JobError `json:"errors"`
	FailureReason *string    `json:"failure_reason"`
}

// JobError is a failed target of a job.
type JobError struct {
	Platform           string `json:"platform"`
	ConnectedAccountID string `json:"connected_account_id"`
	Message            string `json:"message"`
}

func jobView(j *persistence.Job) Job {
	completed, failed := j.Counts()
	out := Job{TrackingID: j.TrackingID, PostID: j.PostID, Status: j.Status, Total: len(j.Targets), Completed: completed, Failed: failed,
		PlatformStatuses: make([]PlatformStatus, 0, len(j.Targets)), CreatedAt: j.CreatedAt, CompletedAt: j.CompletedAt, Errors: []JobError{}}
	var failures []failure
	for _, t := range j.Targets {
		out.PlatformStatuses = append(out.PlatformStatuses, PlatformStatus{Platform: t.Platform, ConnectedAccountID: t.AccountID, Phase: t.Phase, Message: t.Message})
		if t.Phase == persistence.PhaseFailed {
			out.Errors = append(out.Errors, JobError{Platform: t.Platform, ConnectedAccountID: t.AccountID, Message: t.Message})
			failures = append(failures, failure{t.Platform, t.Message})
		}
	}
	out.FailureReason = failureReason(failures, len(j.Targets))
	return out
}

func (h *handlers) jobError(c *echo.Context, err error) error {
	switch {
	case err == job.ErrNotFound:
		return apierr.NotFound("job")
	case err == job.ErrForbidden:
		return apierr.Forbidden("job")
	}
	return h.actorError(c, "job", err)
}

func (h *handlers) getJob(c *echo.Context) error {
	id, err := parseUUID("trackingId", c.Param("trackingId"))
	if err != nil {
		return err
	}
	r, err := ask[*job.Reply](h, c, h.Jobs.To(id), &job.Get{Scope: server.Principal(c).Scope()})
	if err != nil {
		return h.jobError(c, err)
	}
	return c.JSON(http.StatusOK, jobView(r.Job))
}
