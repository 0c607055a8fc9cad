package api

import "time"

// The types of the campaign routes: the request as read (campaigndecode.go), before its posts are
// checked (campaigns.go), and the answers.

// campaignRequest is POST /v1/campaigns as read, before its posts are checked.
type campaignRequest struct {
	name   string
	mode   string
	dryRun bool
	csv    bool
	rows   []*campaignRow
}

// campaignRow is one post of a campaign as read: its fields, and what was wrong with them.
type campaignRow struct {
	content          *string
	platforms, media []string
	// hasPlatforms and hasMedia say that the field was read without error.
	hasPlatforms, hasMedia bool
	scheduledAt, zone      *string
	// specs are the post's targets entries (its networks' own content, media and options); nil
	// when it gave none.
	specs []targetSpec
	errs  []string
}

// RowErrors are a bad post's errors: Row is its 1-based position in posts, or its 1-based data
// row in the CSV (the header is not counted).
type RowErrors struct {
	Row    int      `json:"row"`
	Errors []string `json:"errors"`
}

// CampaignAccepted is the 202 answer of POST /v1/campaigns.
type CampaignAccepted struct {
	CampaignID string           `json:"campaign_id"`
	Posts      []CampaignPostID `json:"posts"`
	StreamURL  string           `json:"stream_url"`
}

// CampaignPostID is a post of a new campaign, in the order of the request: its id, and its job's
// tracking id when the campaign publishes at once.
type CampaignPostID struct {
	PostID     string `json:"post_id"`
	TrackingID string `json:"tracking_id,omitempty"`
}

// CampaignDryRun is the 200 answer of a valid dry run: what the campaign would create.
type CampaignDryRun struct {
	DryRun  bool   `json:"dry_run"`
	Valid   bool   `json:"valid"`
	Publish string `json:"publish"`
	Posts   int    `json:"posts"`
	// Targets counts the posts' connected accounts; ByPlatform splits them by network.
	Targets    int            `json:"targets"`
	ByPlatform map[string]int `json:"by_platform"`
	Rows       []RowErrors    `json:"rows"`
}

// CampaignListItem is a campaign in a list.
type CampaignListItem struct {
	ID      string  `json:"id"`
	Name    *string `json:"name"`
	Publish string  `json:"publish"`
	// Status is publishing (a post is publishing), scheduled (one is scheduled, none
	// publishing), draft (every post is a draft), cancelled (DELETE kept some posts, none is
	// open) or completed (every post took its outcome).
	Status string `json:"status"`
	// Posts counts the campaign's posts now (deleted ones are gone); Totals splits them by
	// status.
	Posts       int            `json:"posts"`
	Totals      map[string]int `json:"totals"`
	CreatedAt   time.Time      `json:"created_at"`
	CancelledAt *time.Time     `json:"cancelled_at"`
}

// CampaignDetail is GET /v1/campaigns/:id.
type CampaignDetail struct {
	CampaignListItem
	// ByPlatform counts the targets of each network by status.
	ByPlatform map[string]*PlatformTotals `json:"by_platform"`
	// FailedTargets lists the failed targets with their errors, in post order (at most
	// maxFailedTargets; FailedTargetsTruncated says when there are more).
	FailedTargets          []FailedTarget `json:"failed_targets"`
	FailedTargetsTruncated bool           `json:"failed_targets_truncated"`
	StreamURL              string         `json:"stream_url"`
}

// PlatformTotals are a network's targets in a campaign.
type PlatformTotals struct {
	Targets    int `json:"targets"`
	Pending    int `json:"pending"`
	Publishing int `json:"publishing"`
	Published  int `json:"published"`
	Failed     int `json:"failed"`
}

// FailedTarget is a failed target of a campaign's post.
type FailedTarget struct {
	PostID             string `json:"post_id"`
	ConnectedAccountID string `json:"connected_account_id"`
	Platform           string `json:"platform"`
	Error              string `json:"error"`
}

// CampaignRetried is the 202 answer of POST /v1/campaigns/:id/retry.
type CampaignRetried struct {
	CampaignID string            `json:"campaign_id"`
	Retried    []RetriedPost     `json:"retried"`
	Skipped    []SkippedPost     `json:"skipped"`
	Targets    int               `json:"targets"`
	StreamURL  string            `json:"stream_url"`
	Only       map[string]string `json:"only"`
}

// RetriedPost is a post published again: its new job, and how many targets it publishes.
type RetriedPost struct {
	PostID     string `json:"post_id"`
	TrackingID string `json:"tracking_id"`
	Targets    int    `json:"targets"`
}

// SkippedPost is a post with selected failed targets that was not published again, and why.
type SkippedPost struct {
	PostID string `json:"post_id"`
	Reason string `json:"reason"`
}

// CampaignCancelled is the answer of DELETE /v1/campaigns/:id.
type CampaignCancelled struct {
	CampaignID string `json:"campaign_id"`
	// Cancelled are the draft and scheduled posts deleted.
	Cancelled []string `json:"cancelled"`
	// Kept are the posts left, with their statuses: publishing, or final.
	Kept []KeptPost `json:"kept"`
	// Deleted says that no post was left and the campaign itself is gone.
	Deleted bool `json:"deleted"`
}

// KeptPost is a post DELETE left in place.
type KeptPost struct {
	PostID string `json:"post_id"`
	Status string `json:"status"`
}
