package api

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors"
	"github.com/heraldhq/herald/actors/campaign"
	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/platforms"
)

// POST /v1/campaigns/:id/retry and DELETE /v1/campaigns/:id: asked of the campaign's actor, which
// acts on its posts.

// campaignOpTimeout bounds a retry's or a cancel's answer: the campaign asks each of up to a
// thousand posts, some at a time.
func (h *handlers) campaignOpTimeout() time.Duration { return max(h.AskTimeout, 30*time.Second) }

// retryCampaign serves POST /v1/campaigns/:id/retry {account_id?, platform?}: every failed
// target of the campaign's failed and partial posts is published again, or only those of one
// connected account or network, one new job per post.
func (h *handlers) retryCampaign(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	user := server.Principal(c).Scope()
	var only post.Only
	if len(bytes.TrimSpace(raw)) > 0 {
		o, err := parseObject(raw)
		if err != nil {
			return err
		}
		if v, ok := o["account_id"]; ok && jsonType(v) != "null" {
			s, err := o.str("account_id", false)
			if err != nil {
				return err
			}
			if only.AccountID, err = parseUUID("account_id", *s); err != nil {
				return err
			}
			if _, ok, err := h.Store.AccountPlatform(user, only.AccountID); err != nil {
				return h.storeError(c, err)
			} else if !ok {
				return apierr.AccountNotYours("account_id", only.AccountID)
			}
		}
		if v, ok := o["platform"]; ok && jsonType(v) != "null" {
			s, err := o.str("platform", false)
			if err != nil {
				return err
			}
			if !platforms.Platform(*s).Valid() {
				return apierr.Validation("platform: must be one of %s", platformNames())
			}
			only.Platform = *s
		}
	}
	// A retry publishes again: like a publish, it is refused while the backlog is full.
	if err := h.backlogFull(); err != nil {
		return err
	}
	r, err := actors.AskWithin[*campaign.RetryReply](c.Request().Context(), h.campaignOpTimeout(), h.Campaigns.To(id),
		&campaign.Retry{Scope: user, Only: only, Quota: h.quota(c)})
	if err != nil {
		return h.campaignError(c, err)
	}
	out := &CampaignRetried{CampaignID: id, Retried: make([]RetriedPost, 0, len(r.Retried)), Skipped: make([]SkippedPost, 0, len(r.Skipped)),
		StreamURL: campaignStreamURL(c, id), Only: map[string]string{}}
	if only.AccountID != "" {
		out.Only["account_id"] = only.AccountID
	}
	if only.Platform != "" {
		out.Only["platform"] = only.Platform
	}
	for _, p := range r.Retried {
		out.Retried = append(out.Retried, RetriedPost{PostID: p.PostID, TrackingID: p.TrackingID, Targets: p.Targets})
		out.Targets += p.Targets
	}
	for _, p := range r.Skipped {
		out.Skipped = append(out.Skipped, SkippedPost{PostID: p.PostID, Reason: p.Reason})
	}
	return c.JSON(http.StatusAccepted, out)
}

func platformNames() string {
	names := make([]string, len(platforms.All))
	for i, p := range platforms.All {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// deleteCampaign serves DELETE /v1/campaigns/:id: it cancels what is still draft or scheduled
// and reports the posts it leaves.
func (h *handlers) deleteCampaign(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	r, err := actors.AskWithin[*campaign.CancelReply](c.Request().Context(), h.campaignOpTimeout(), h.Campaigns.To(id),
		&campaign.Cancel{Scope: server.Principal(c).Scope()})
	if err != nil {
		return h.campaignError(c, err)
	}
	out := &CampaignCancelled{CampaignID: id, Cancelled: r.Cancelled, Kept: make([]KeptPost, 0, len(r.Kept)), Deleted: r.Removed}
	for _, k := range r.Kept {
		out.Kept = append(out.Kept, KeptPost{PostID: k.PostID, Status: k.Status})
	}
	return c.JSON(http.StatusOK, out)
}

func (h *handlers) campaignError(c *echo.Context, err error) error {
	if errors.Is(err, campaign.ErrNotFound) {
		return apierr.NotFound("campaign")
	}
	return h.lifecycleError(c, err)
}
