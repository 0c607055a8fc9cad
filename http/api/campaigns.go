package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/campaign"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// Campaigns (docs/campaigns.md): up to a thousand posts submitted, validated and committed
// together, followed on one stream, retried and cancelled together.
const (
	campaignsPath      = "/campaigns"
	campaignStreamPath = "/campaigns/:id/stream"
	// MaxCampaignPosts caps the posts of one campaign.
	MaxCampaignPosts = campaign.MaxPosts
	// MaxCampaignBody caps a campaign's body, JSON or CSV: a thousand posts of several hundred
	// characters each fit with room to spare.
	MaxCampaignBody = 8 << 20
	// maxCampaignName caps a campaign's name, in characters.
	maxCampaignName = 200
	// maxFailedTargets caps the failed targets GET /v1/campaigns/:id lists.
	maxFailedTargets = 1000
)

// CampaignStreamRoute and DashboardCampaignStreamRoute are the campaign stream on each door
// (server.Config's LongRunning).
const (
	CampaignStreamRoute          = V1Prefix + campaignStreamPath
	DashboardCampaignStreamRoute = DashboardPrefix + campaignStreamPath
)

// BodyLimits are the routes whose bodies may exceed the server's default cap, with their caps
// (server.Config's BodyLimits).
func BodyLimits() map[string]int64 {
	return map[string]int64{V1Prefix + campaignsPath: MaxCampaignBody, DashboardPrefix + campaignsPath: MaxCampaignBody}
}

// campaignLocation and campaignStreamURL are a campaign's links through the request's door.
func campaignLocation(c *echo.Context, id string) string { return door(c) + campaignsPath + "/" + id }

func campaignStreamURL(c *echo.Context, id string) string { return campaignLocation(c, id) + "/stream" }

// createCampaign serves POST /v1/campaigns: JSON, or CSV with Content-Type text/csv.
func (h *handlers) createCampaign(c *echo.Context) error {
	raw, err := readRawLimit(c.Request(), MaxCampaignBody)
	if err != nil {
		return err
	}
	req, err := readCampaign(c, raw)
	if err != nil {
		return err
	}
	if req.dryRun {
		posts, err := h.checkCampaign(c, req)
		if err != nil {
			return err
		}
		if err := h.checkCampaignQuota(c, req.mode, len(posts)); err != nil {
			return err
		}
		if err := h.campaignTooLarge(req.mode, posts); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, dryRunReport(req.mode, posts))
	}
	// The Idempotency-Key's fingerprint covers what the request says: its body, and for a CSV
	// what its query says (name and publish, in whatever order and spelling).
	fp := append([]byte("json\x00"), raw...)
	if req.csv {
		fp = append([]byte("csv\x00"+req.name+"\x00"+req.mode+"\x00"), raw...)
	}
	return h.publishFlow(c, fp, func(idem *post.Idempotency, fingerprint []byte) error {
		if req.mode == persistence.CampaignNow {
			if err := h.backlogFull(); err != nil {
				return err
			}
		}
		posts, err := h.checkCampaign(c, req)
		if err != nil {
			return err
		}
		if err := h.campaignBacklog(req.mode, posts); err != nil {
			return err
		}
		id := uuid.Must(uuid.NewV7()).String()
		p := server.Principal(c)
		m := &campaign.Create{Campaign: &persistence.Campaign{UserID: p.User.ID, WorkspaceID: p.ObjectWorkspace(), Name: req.name, Publish: req.mode, CreatedAt: h.Now().UTC()},
			Posts: posts, Idempotency: idem}
		if req.mode != persistence.CampaignDraft {
			m.Quota = h.quota(c)
			if m.Hold, err = h.approvalHold(c); err != nil {
				return err
			}
		}
		acc := &CampaignAccepted{CampaignID: id, Posts: make([]CampaignPostID, len(posts)), StreamURL: campaignStreamURL(c, id)}
		for i, p := range posts {
			acc.Posts[i].PostID = p.ID
			if req.mode == persistence.CampaignNow && m.Hold == nil {
				jobID := uuid.Must(uuid.NewV7()).String()
				m.JobIDs = append(m.JobIDs, jobID)
				acc.Posts[i].TrackingID = jobID
			}
		}
		body, err := json.Marshal(acc)
		if err != nil {
			return err
		}
		if idem != nil {
			idem.Record = &persistence.IdempotencyRecord{Fingerprint: fingerprint, Status: http.StatusAccepted, Body: body,
				Location: campaignLocation(c, id), CreatedAt: h.Now().UTC()}
		}
		if _, err := ask[*campaign.CreateReply](h, c, h.Campaigns.To(id), m); err != nil {
			return h.lifecycleError(c, err)
		}
		c.Response().Header().Set("Location", campaignLocation(c, id))
		return c.JSONBlob(http.StatusAccepted, body)
	})
}

func checkCampaignSize(n int, what string) error {
	switch {
	case n == 0:
		return apierr.Validation("%s: a campaign has at least one post; this one has none", what)
	case n > MaxCampaignPosts:
		return apierr.Validation("%s: a campaign has at most %d posts; this one has %d", what, MaxCampaignPosts, n)
	}
	return nil
}

// checkCampaign checks every post of a campaign by the one check of a post (check.go), as a
// single publish, schedule or draft is: the post's rules, the caller's own connected accounts and
// confirmed media, and each target network's own rules unless the campaign stores drafts; and
// its time when the campaign schedules. It returns the posts, ready to commit, or a
// 400 listing every bad post's errors by row.
func (h *handlers) checkCampaign(c *echo.Context, req *campaignRequest) ([]*persistence.Post, error) {
	user := server.Principal(c).User
	media := mediaCache{}
	posts := make([]*persistence.Post, len(req.rows))
	var bad []RowErrors
	for i, row := range req.rows {
		p, errs, err := h.checkCampaignRow(c, user, req.mode, row, media)
		if err != nil {
			return nil, err
		}
		if len(errs) > 0 {
			bad = append(bad, RowErrors{Row: i + 1, Errors: errs})
			continue
		}
		posts[i] = p
	}
	if len(bad) > 0 {
		what, first := "posts", "post"
		if req.csv {
			what, first = "data rows", "data row"
		}
		msg := fmt.Sprintf("%d of %d %s are invalid and nothing was created; details.rows lists every error by row (first: %s %d: %s)",
			len(bad), len(req.rows), what, first, bad[0].Row, bad[0].Errors[0])
		return nil, apierr.Validation("%s", msg).WithDetails(map[string]any{"rows": bad})
	}
	return posts, nil
}

// checkCampaignRow checks one post by the one check of a post (checkPost), the networks' rules
// included unless the campaign stores drafts; errs are its errors, err a failure to read the
// store.
func (h *handlers) checkCampaignRow(c *echo.Context, user *persistence.User, mode string, row *campaignRow, cache mediaCache) (*persistence.Post, []string, error) {
	var later []string
	var at *time.Time
	switch {
	case mode == persistence.CampaignSchedule && row.scheduledAt == nil:
		later = append(later, `scheduledAt: Required: a campaign with publish "schedule" needs a time for every post`)
	case mode == persistence.CampaignSchedule:
		t, err := ParseScheduledAt(*row.scheduledAt, row.zone, user.Timezone)
		if err == nil {
			err = checkScheduleWindow(t, h.Now())
		}
		if err != nil {
			later = append(later, err.Error())
		} else {
			at = &t
		}
	case row.scheduledAt != nil:
		later = append(later, `scheduledAt: only a campaign with publish "schedule" takes a time`)
	case row.zone != nil:
		later = append(later, `timezone: only a campaign with publish "schedule" takes a time zone`)
	}
	content := ""
	if row.content != nil {
		content = *row.content
	}
	s := &submission{content: &content, media: row.media, specs: row.specs, whole: true, publish: mode != persistence.CampaignDraft, prior: row.errs, later: later}
	if row.hasPlatforms {
		s.accounts = row.platforms
	}
	res, err := h.checkPost(c, server.Principal(c).Scope(), s, cache)
	if err != nil {
		return nil, nil, err
	}
	if len(res.errs) > 0 {
		return nil, res.errs, nil
	}
	return &persistence.Post{ID: uuid.Must(uuid.NewV7()).String(), UserID: user.ID, WorkspaceID: server.Principal(c).ObjectWorkspace(), Content: content, Status: persistence.PostDraft,
		MediaIDs: append([]string{}, row.media...), Targets: res.post.targets, ScheduledAt: at}, nil, nil
}

// checkCampaignQuota answers a dry run as the free plan's quota would answer the campaign.
func (h *handlers) checkCampaignQuota(c *echo.Context, mode string, n int) error {
	q := h.quota(c)
	if mode == persistence.CampaignDraft {
		return nil
	}
	used, wsUsed := 0, 0
	_ = h.Store.View(func(tx *persistence.Tx) error {
		used = tx.QuotaUsed(server.Principal(c).User.ID, q.Month)
		wsUsed = tx.Usage(server.Principal(c).Scope(), q.Month).Get(persistence.UsagePostsAccepted, "")
		return nil
	})
	if q.Limit > 0 && used+n > q.Limit {
		return h.lifecycleError(c, &post.QuotaExceededError{Limit: q.Limit, Used: used, Month: q.Month, Requested: n})
	}
	if q.Workspace != nil && wsUsed+n > *q.Workspace {
		return h.lifecycleError(c, &post.QuotaExceededError{Limit: *q.Workspace, Used: wsUsed, Month: q.Month, Requested: n, OfWorkspace: true})
	}
	return nil
}

// campaignTargets counts the targets of a campaign's posts: the publishes it starts.
func campaignTargets(posts []*persistence.Post) int {
	n := 0
	for _, p := range posts {
		n += len(p.Targets)
	}
	return n
}

// campaignTooLarge refuses a campaign that publishes now with more targets than the server takes
// in hand at once (--max-job-backlog, job.Backlog): it could never be accepted whole, so it is 400
// limit_exceeded rather than a 503 to retry. A dry run reports it as the real request would.
func (h *handlers) campaignTooLarge(mode string, posts []*persistence.Post) error {
	limit := h.JobBacklog.Limit()
	if mode != persistence.CampaignNow || limit == 0 {
		return nil
	}
	if n := campaignTargets(posts); n > limit {
		return apierr.New(http.StatusBadRequest, apierr.CodeLimitExceeded,
			"a campaign that publishes now starts its %d targets at once, more than the %d publishes this server takes in hand; "+
				"nothing was created: split it into campaigns of at most %d targets, or schedule it", n, limit, limit).
			WithDetails(map[string]any{"limit": limit, "targets": n})
	}
	return nil
}

// campaignBacklog holds a campaign that publishes now to the publish backlog as a whole, the way
// backlogFull holds one publish: its targets are accepted all together only when they fit under
// the limit beside the publishes already in hand, else the campaign is refused (503, Retry-After)
// and nothing of it is written. Two campaigns checked at the same instant may both pass, as two
// publishes may: the limit bounds the backlog to within the write requests served at once.
func (h *handlers) campaignBacklog(mode string, posts []*persistence.Post) error {
	if err := h.campaignTooLarge(mode, posts); err != nil {
		return err
	}
	n := campaignTargets(posts)
	if mode != persistence.CampaignNow || h.JobBacklog.Fits(n) {
		return nil
	}
	return server.Overloaded(server.OverloadJobBacklog, fmt.Sprintf(
		"the server has %d publish jobs in hand and takes %d; this campaign's %d targets do not fit beside them; nothing was created; retry shortly",
		h.JobBacklog.Len(), h.JobBacklog.Limit(), n))
}

func dryRunReport(mode string, posts []*persistence.Post) *CampaignDryRun {
	r := &CampaignDryRun{DryRun: true, Valid: true, Publish: mode, Posts: len(posts), ByPlatform: map[string]int{}, Rows: []RowErrors{}}
	for _, p := range posts {
		for _, t := range p.Targets {
			r.Targets++
			r.ByPlatform[t.Platform]++
		}
	}
	return r
}
