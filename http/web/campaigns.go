package web

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// campaignsPerPage is the length of a page of the campaigns list.
const campaignsPerPage = 20

type campaignsData struct {
	Campaigns []api.CampaignListItem
	// Accounts are the workspace's connected accounts, whose ids a CSV's platforms column names.
	Accounts []*persistence.Account
	// CanWrite: the person may submit and retry campaigns (an editor or above); a viewer sees the
	// list without the form.
	CanWrite    bool
	Page, Pages int
	Total       int
	Prev, Next  int
}

// campaigns is GET /campaigns?page=: a CSV campaign uploaded or pasted, checked by a dry run
// (POST /api/campaigns with dry_run, the API's own check, shown row by row) and submitted; below,
// the workspace's campaigns with their status and totals, as GET /api/campaigns lists them.
func (p *pages) campaigns(c *echo.Context) error {
	v := p.newView(c, "Campaigns", "campaigns", nil)
	d := campaignsData{CanWrite: server.Principal(c).HasRole(auth.RoleEditor), Page: 1}
	if n, err := strconv.Atoi(c.QueryParam("page")); err == nil && n > 0 && n < 1_000_000 {
		d.Page = n
	}
	err := p.Store.View(func(tx *persistence.Tx) error {
		list, n, err := tx.ListCampaigns(v.Scope, (d.Page-1)*campaignsPerPage, campaignsPerPage)
		if err != nil {
			return err
		}
		d.Total = n
		if d.Accounts, err = tx.AccountsIn(v.Scope); err != nil {
			return err
		}
		for _, camp := range list {
			d.Campaigns = append(d.Campaigns, api.CampaignItem(camp, tx.CampaignCounts(camp.ID)))
		}
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	d.Pages = (d.Total + campaignsPerPage - 1) / campaignsPerPage
	if d.Page > 1 {
		d.Prev = d.Page - 1
	}
	if d.Page < d.Pages {
		d.Next = d.Page + 1
	}
	v.Data = d
	return p.render(c, http.StatusOK, "campaigns", v)
}

type campaignPostRow struct {
	Post    *persistence.Post
	Targets []targetRow
}

type statusCount struct {
	Status string
	N      int
}

type campaignData struct {
	Campaign api.CampaignListItem
	// Totals are the statuses that have posts, in the order of persistence.PostStatuses.
	Totals []statusCount
	Posts  []campaignPostRow
	// Open: some post is scheduled, publishing or waiting for approval, so the page follows the
	// campaign's stream until its done event.
	Open bool
	// Failed counts the failed targets, FailedNetworks their networks (to retry one only);
	// CanWrite says whether the person may retry them.
	Failed         int
	FailedNetworks []string
	CanWrite       bool
	// Cancellable counts the drafts and scheduled posts DELETE would cancel; CanCancel says
	// whether the person may (an admin or above, as DELETE /api/campaigns/:id asks).
	Cancellable int
	CanCancel   bool
}

// campaign is GET /campaigns/:id: the campaign's totals and every post with each target's state,
// followed live on the campaign's one stream (GET /api/campaigns/:id/stream) while anything is
// open, and the failed targets retried (POST /api/campaigns/:id/retry).
func (p *pages) campaign(c *echo.Context) error {
	v := p.newView(c, "Campaign", "campaigns", nil)
	id := c.Param("id")
	if _, err := persistence.ID(id); err != nil {
		return p.fail(c, http.StatusNotFound, "There is no such campaign.")
	}
	pr := server.Principal(c)
	d := campaignData{CanWrite: pr.HasRole(auth.RoleEditor), CanCancel: pr.HasRole(auth.RoleAdmin)}
	err := p.Store.View(func(tx *persistence.Tx) error {
		camp, err := tx.Campaign(id)
		if err != nil {
			return err
		}
		// Another workspace's campaign is not found, as on the API.
		if camp.Scope() != v.Scope {
			return persistence.ErrNotFound
		}
		counts := tx.CampaignCounts(id)
		d.Campaign = api.CampaignItem(camp, counts)
		d.Open = counts.Open() > 0
		d.Cancellable = counts.Of(persistence.PostDraft) + counts.Of(persistence.PostScheduled)
		// A campaign's posts often share their accounts: each is read once.
		usernames := map[string]string{}
		for _, s := range persistence.PostStatuses {
			if n := counts.Of(s); n > 0 {
				d.Totals = append(d.Totals, statusCount{s, n})
			}
		}
		for _, cp := range tx.CampaignPosts(id) {
			po, err := tx.Post(cp.PostID)
			if errors.Is(err, persistence.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			row := campaignPostRow{Post: po}
			for _, t := range po.Targets {
				r := targetRow{Target: t, Name: networkName(t.Platform)}
				name, seen := usernames[t.AccountID]
				if !seen {
					if a, err := tx.Account(t.AccountID); err == nil && a.Username != nil {
						name = *a.Username
					}
					usernames[t.AccountID] = name
				}
				r.Username = name
				if t.Status == persistence.TargetFailed {
					d.Failed++
					if !contains(d.FailedNetworks, t.Platform) {
						d.FailedNetworks = append(d.FailedNetworks, t.Platform)
					}
				}
				row.Targets = append(row.Targets, r)
			}
			d.Posts = append(d.Posts, row)
		}
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	if d.Campaign.Name != nil {
		v.Title = "Campaign: " + *d.Campaign.Name
	}
	v.Data = d
	return p.render(c, http.StatusOK, "campaign", v)
}

// campaignNames reads the names of the posts' campaigns, for the posts list and a post's page:
// campaign id → its name, or "Campaign" for one without a name. A campaign that is gone is left
// out.
func campaignNames(tx *persistence.Tx, posts ...*persistence.Post) map[string]string {
	names := map[string]string{}
	for _, po := range posts {
		if po == nil || po.CampaignID == "" {
			continue
		}
		if _, done := names[po.CampaignID]; done {
			continue
		}
		camp, err := tx.Campaign(po.CampaignID)
		if err != nil {
			continue
		}
		names[po.CampaignID] = camp.Name
		if camp.Name == "" {
			names[po.CampaignID] = "Campaign"
		}
	}
	return names
}
