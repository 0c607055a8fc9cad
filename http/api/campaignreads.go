package api

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/post"
	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// GET /v1/campaigns and GET /v1/campaigns/:id: read from the store in one read transaction.

func campaignStatus(c *persistence.Campaign, counts persistence.CampaignCounts) string {
	switch {
	case counts.Of(persistence.PostPublishing) > 0:
		return "publishing"
	case counts.Of(persistence.PostScheduled) > 0:
		return "scheduled"
	case counts.Of(persistence.PostPendingApproval) > 0:
		return "pending_approval"
	case c.CancelledAt != nil:
		return "cancelled"
	case counts.Total() > 0 && counts.Total() == counts.Of(persistence.PostDraft):
		return "draft"
	}
	return "completed"
}

// CampaignItem is a campaign as GET /v1/campaigns lists it: the dashboard's Campaigns page shows
// the same status and totals.
func CampaignItem(c *persistence.Campaign, counts persistence.CampaignCounts) CampaignListItem {
	return campaignItem(c, counts)
}

func campaignItem(c *persistence.Campaign, counts persistence.CampaignCounts) CampaignListItem {
	it := CampaignListItem{ID: c.ID, Publish: c.Publish, Status: campaignStatus(c, counts), Posts: counts.Total(),
		Totals: post.CampaignTotals(counts), CreatedAt: c.CreatedAt, CancelledAt: c.CancelledAt}
	if c.Name != "" {
		it.Name = &c.Name
	}
	return it
}

// campaignDetail reads a campaign with its posts' targets in one read transaction.
func campaignDetail(tx *persistence.Tx, c *persistence.Campaign, stream string) (*CampaignDetail, error) {
	counts := tx.CampaignCounts(c.ID)
	d := &CampaignDetail{CampaignListItem: campaignItem(c, counts), ByPlatform: map[string]*PlatformTotals{}, FailedTargets: []FailedTarget{}, StreamURL: stream}
	for _, cp := range tx.CampaignPosts(c.ID) {
		p, err := tx.Post(cp.PostID)
		if errors.Is(err, persistence.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, t := range p.Targets {
			pt := d.ByPlatform[t.Platform]
			if pt == nil {
				pt = &PlatformTotals{}
				d.ByPlatform[t.Platform] = pt
			}
			pt.Targets++
			switch t.Status {
			case persistence.TargetPublishing:
				pt.Publishing++
			case persistence.TargetPublished:
				pt.Published++
			case persistence.TargetFailed:
				pt.Failed++
				if len(d.FailedTargets) == maxFailedTargets {
					d.FailedTargetsTruncated = true
					continue
				}
				msg := ""
				if t.Error != nil {
					msg = *t.Error
				}
				d.FailedTargets = append(d.FailedTargets, FailedTarget{PostID: p.ID, ConnectedAccountID: t.AccountID, Platform: t.Platform, Error: msg})
			default:
				pt.Pending++
			}
		}
	}
	return d, nil
}

// ownCampaign reads a campaign of the request's workspace (scope: persistence.Scope); another
// workspace's is not found, like a missing one.
func ownCampaign(tx *persistence.Tx, id, scope string) (*persistence.Campaign, error) {
	c, err := tx.Campaign(id)
	if errors.Is(err, persistence.ErrNotFound) || (err == nil && c.Scope() != scope) {
		return nil, apierr.NotFound("campaign")
	}
	return c, err
}

func (h *handlers) getCampaign(c *echo.Context) error {
	id, err := parseUUID("id", c.Param("id"))
	if err != nil {
		return err
	}
	var d *CampaignDetail
	if err := h.Store.View(func(tx *persistence.Tx) error {
		camp, err := ownCampaign(tx, id, server.Principal(c).Scope())
		if err != nil {
			return err
		}
		d, err = campaignDetail(tx, camp, campaignStreamURL(c, id))
		return err
	}); err != nil {
		return h.campaignReadError(c, err)
	}
	return c.JSON(http.StatusOK, d)
}

func (h *handlers) campaignReadError(c *echo.Context, err error) error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return h.storeError(c, err)
}

// listCampaigns serves GET /v1/campaigns: the caller's campaigns, newest first, paged like
// GET /v1/posts.
func (h *handlers) listCampaigns(c *echo.Context) error {
	page, err := queryInt(c, "page", 1, 1, 1_000_000)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	items := []CampaignListItem{}
	total := 0
	if err := h.Store.View(func(tx *persistence.Tx) error {
		list, n, err := tx.ListCampaigns(server.Principal(c).Scope(), (page-1)*limit, limit)
		if err != nil {
			return err
		}
		total = n
		for _, camp := range list {
			items = append(items, campaignItem(camp, tx.CampaignCounts(camp.ID)))
		}
		return nil
	}); err != nil {
		return h.storeError(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{
		"data":       items,
		"pagination": map[string]int{"page": page, "limit": limit, "total": total, "total_pages": (total + limit - 1) / limit},
	})
}
