package mcpserver

import (
	"context"
	"net/http"
	"time"
)

var campaignModes = []string{"now", "schedule", "draft"}

func (t *Tools) addCampaignTools() {
	add(t, write("create_campaign", "Create a campaign").params("platforms", "accounts", "media", "media_ids", "scheduledAt", "scheduled_at", "publish", "mode").enum("mode", campaignModes...),
		"Creates many posts at once (a campaign, up to 1,000 posts): published now, each scheduled at its scheduled_at, or kept as drafts (mode). A post's targets give an account its own text, media and options, as publish_post's do. "+
			"With dry_run, checks the posts and answers what would be created without creating anything. Answers campaign_id and each post's post_id (and tracking_id when published now).",
		t.createCampaign)
	add(t, read("list_campaigns", "List campaigns").params("page", "cursor"),
		"The user's campaigns, newest first, with their status and post counts. Pages of limit campaigns (default 20, at most 100): pass next_cursor as cursor for the next page.",
		t.listCampaigns)
	add(t, read("get_campaign", "Get a campaign"),
		"One campaign: its status, its posts by status and by platform, and the failed targets with their errors.",
		t.getCampaign)
	add(t, write("retry_campaign", "Retry a campaign").params("account_id", "account").enum("platform", platformNames()...),
		"Publishes again every failed target of a campaign's failed and partial posts, or only those of one account or platform. Answers the new tracking_ids.",
		t.retryCampaign)
}

// CampaignPostIn is one post of a campaign.
type CampaignPostIn struct {
	Content     string     `json:"content" jsonschema:"the text of the post"`
	Accounts    []string   `json:"accounts" jsonschema:"target accounts: ids, or a platform name when the user has exactly one account there"`
	MediaIDs    []string   `json:"media_ids,omitempty" jsonschema:"media ids from upload_media"`
	Targets     []targetIn `json:"targets,omitempty" jsonschema:"per-account overrides, at most one entry per account of the post: an account's own text, media and network options (as publish_post's targets)"`
	ScheduledAt string     `json:"scheduled_at,omitempty" jsonschema:"with mode schedule: when to publish (ISO 8601 with an offset, or naive with timezone)"`
	Timezone    string     `json:"timezone,omitempty" jsonschema:"an IANA zone for a naive scheduled_at"`
}

type createCampaignIn struct {
	Name   string           `json:"name,omitempty" jsonschema:"the campaign's name"`
	Mode   string           `json:"mode,omitempty" jsonschema:"now (publish at once, the default), schedule (each post at its scheduled_at) or draft"`
	Posts  []CampaignPostIn `json:"posts" jsonschema:"the posts, in order (at most 1,000)"`
	DryRun bool             `json:"dry_run,omitempty" jsonschema:"check only: answer what would be created, create nothing"`
}

type campaignIDIn struct {
	CampaignID string `json:"campaign_id" jsonschema:"the campaign's id"`
}

type listCampaignsIn struct {
	Cursor int `json:"cursor,omitempty" jsonschema:"next_cursor of the previous answer (omit for the first page)"`
	Limit  int `json:"limit,omitempty" jsonschema:"campaigns per page (default 20, at most 100)"`
}

type retryCampaignIn struct {
	CampaignID string `json:"campaign_id" jsonschema:"the campaign's id"`
	Account    string `json:"account,omitempty" jsonschema:"only this account's failed targets: its account_id, or a platform name when the user has exactly one account there"`
	Platform   string `json:"platform,omitempty" jsonschema:"only this platform's failed targets"`
}

// CampaignCreated answers create_campaign.
type CampaignCreated struct {
	CampaignID string `json:"campaign_id,omitempty"`
	Posts      []struct {
		PostID     string `json:"post_id"`
		TrackingID string `json:"tracking_id,omitempty"`
	} `json:"posts,omitempty"`
	// The dry run's answer: the posts it would create.
	DryRun     bool           `json:"dry_run,omitempty"`
	PostCount  int            `json:"post_count,omitempty"`
	Valid      bool           `json:"valid,omitempty"`
	Targets    int            `json:"targets,omitempty"`
	ByPlatform map[string]int `json:"by_platform,omitempty"`
	Next       string         `json:"next,omitempty"`
}

// Campaign is a campaign in a list, or with its details.
type Campaign struct {
	CampaignID  string         `json:"campaign_id"`
	Name        *string        `json:"name,omitempty"`
	Mode        string         `json:"mode"`
	Status      string         `json:"status"`
	Posts       int            `json:"posts"`
	Totals      map[string]int `json:"totals"`
	CreatedAt   time.Time      `json:"created_at"`
	CancelledAt *time.Time     `json:"cancelled_at,omitempty"`
	// Details (get_campaign).
	ByPlatform    map[string]map[string]int `json:"by_platform,omitempty"`
	FailedTargets []struct {
		PostID    string `json:"post_id"`
		AccountID string `json:"account_id"`
		Platform  string `json:"platform"`
		Error     string `json:"error"`
	} `json:"failed_targets,omitempty"`
	FailedTargetsTruncated bool `json:"failed_targets_truncated,omitempty"`
}

// CampaignList answers list_campaigns.
type CampaignList struct {
	Campaigns  []Campaign `json:"campaigns"`
	Total      int        `json:"total"`
	NextCursor *int       `json:"next_cursor,omitempty"`
}

// CampaignRetried answers retry_campaign.
type CampaignRetried struct {
	CampaignID string `json:"campaign_id"`
	Retried    []struct {
		PostID     string `json:"post_id"`
		TrackingID string `json:"tracking_id"`
		Targets    int    `json:"targets"`
	} `json:"retried"`
	Skipped []struct {
		PostID string `json:"post_id"`
		Reason string `json:"reason"`
	} `json:"skipped"`
	Targets int `json:"targets"`
}

type v1Campaign struct {
	ID          string                    `json:"id"`
	Name        *string                   `json:"name"`
	Publish     string                    `json:"publish"`
	Status      string                    `json:"status"`
	Posts       int                       `json:"posts"`
	Totals      map[string]int            `json:"totals"`
	CreatedAt   time.Time                 `json:"created_at"`
	CancelledAt *time.Time                `json:"cancelled_at"`
	ByPlatform  map[string]map[string]int `json:"by_platform"`
	Failed      []struct {
		PostID    string `json:"post_id"`
		AccountID string `json:"connected_account_id"`
		Platform  string `json:"platform"`
		Error     string `json:"error"`
	} `json:"failed_targets"`
	FailedTargetsTruncated bool `json:"failed_targets_truncated"`
}

func (c *v1Campaign) out() Campaign {
	o := Campaign{CampaignID: c.ID, Name: c.Name, Mode: c.Publish, Status: c.Status, Posts: c.Posts, Totals: c.Totals, CreatedAt: c.CreatedAt,
		CancelledAt: c.CancelledAt, ByPlatform: c.ByPlatform, FailedTargetsTruncated: c.FailedTargetsTruncated}
	for _, f := range c.Failed {
		o.FailedTargets = append(o.FailedTargets, struct {
			PostID    string `json:"post_id"`
			AccountID string `json:"account_id"`
			Platform  string `json:"platform"`
			Error     string `json:"error"`
		}{f.PostID, f.AccountID, f.Platform, f.Error})
	}
	return o
}

func (t *Tools) createCampaign(ctx context.Context, in createCampaignIn) (CampaignCreated, error) {
	if len(in.Posts) == 0 {
		return CampaignCreated{}, refuse("posts: give at least one post")
	}
	posts := make([]map[string]any, len(in.Posts))
	for i, p := range in.Posts {
		ids, err := t.resolveAccounts(ctx, "posts["+itoa(i+1)+"].accounts", p.Accounts)
		if err != nil {
			return CampaignCreated{}, err
		}
		row := map[string]any{"content": p.Content, "platforms": ids}
		if p.MediaIDs != nil {
			row["media"] = p.MediaIDs
		}
		if p.Targets != nil {
			if row["targets"], err = t.targetsBody(ctx, p.Targets); err != nil {
				return CampaignCreated{}, err
			}
		}
		if p.ScheduledAt != "" {
			row["scheduledAt"] = p.ScheduledAt
		}
		if p.Timezone != "" {
			row["timezone"] = p.Timezone
		}
		posts[i] = row
	}
	body := map[string]any{"posts": posts}
	if in.Name != "" {
		body["name"] = in.Name
	}
	body["publish"] = in.Mode
	if in.Mode == "" {
		body["publish"] = "now"
	}
	if in.DryRun {
		body["dry_run"] = true
	}
	var out CampaignCreated
	if in.DryRun {
		// The dry run answers posts as a count.
		var v1 struct {
			Valid      bool           `json:"valid"`
			Posts      int            `json:"posts"`
			Targets    int            `json:"targets"`
			ByPlatform map[string]int `json:"by_platform"`
		}
		if _, err := t.call(ctx, Request{Method: http.MethodPost, Path: "/v1/campaigns", Body: body}, &v1); err != nil {
			return CampaignCreated{}, err
		}
		return CampaignCreated{DryRun: true, Valid: v1.Valid, PostCount: v1.Posts, Targets: v1.Targets, ByPlatform: v1.ByPlatform}, nil
	}
	if _, err := t.call(ctx, Request{Method: http.MethodPost, Path: "/v1/campaigns", Body: body}, &out); err != nil {
		return CampaignCreated{}, err
	}
	out.Next = "follow the campaign with get_campaign, or a post's tracking_id with get_publish_status"
	return out, nil
}

func (t *Tools) listCampaigns(ctx context.Context, in listCampaignsIn) (CampaignList, error) {
	page := max(in.Cursor, 1)
	var v1 struct {
		Data       []v1Campaign `json:"data"`
		Pagination struct {
			Total      int `json:"total"`
			TotalPages int `json:"total_pages"`
		} `json:"pagination"`
	}
	if _, err := t.call(ctx, get("/v1/campaigns", query("page", itoa(page), "limit", itoa(in.Limit))), &v1); err != nil {
		return CampaignList{}, err
	}
	out := CampaignList{Campaigns: make([]Campaign, 0, len(v1.Data)), Total: v1.Pagination.Total}
	for _, c := range v1.Data {
		out.Campaigns = append(out.Campaigns, c.out())
	}
	if page < v1.Pagination.TotalPages {
		out.NextCursor = ptr(page + 1)
	}
	return out, nil
}

func (t *Tools) getCampaign(ctx context.Context, in campaignIDIn) (Campaign, error) {
	var v1 v1Campaign
	if _, err := t.call(ctx, get("/v1/campaigns/"+esc(in.CampaignID), nil), &v1); err != nil {
		return Campaign{}, err
	}
	return v1.out(), nil
}

func (t *Tools) retryCampaign(ctx context.Context, in retryCampaignIn) (CampaignRetried, error) {
	body := map[string]any{}
	acct, err := t.resolveAccount(ctx, "account", in.Account)
	if err != nil {
		return CampaignRetried{}, err
	}
	if acct != "" {
		body["account_id"] = acct
	}
	p, err := platform("platform", in.Platform)
	if err != nil {
		return CampaignRetried{}, err
	}
	if p != "" {
		body["platform"] = p
	}
	var out CampaignRetried
	if _, err := t.call(ctx, Request{Method: http.MethodPost, Path: "/v1/campaigns/" + esc(in.CampaignID) + "/retry", Body: body}, &out); err != nil {
		return CampaignRetried{}, err
	}
	return out, nil
}
