package mcpserver

import (
	"context"
	"time"

	"github.com/heraldhq/herald/http/live"
)

// ranges are the analytics and inbox windows (/v1's range parameter); defaultRange is the one the
// tools use when none is given, and their descriptions state.
var ranges = []string{"7d", "14d", "28d", "90d", "365d", "custom"}

const defaultRange = "7d"

// granularities are get_analytics' series steps; auto is day up to 31 days, week up to 120, else
// month, so that no window answers more than about 30 points.
var granularities = []string{"auto", "day", "week", "month", "none"}

// DefaultTopPosts and MaxTopPosts bound get_analytics' top_posts.
const (
	DefaultTopPosts = 5
	MaxTopPosts     = 20
)

func (t *Tools) addAnalyticsTools() {
	add(t, read("get_analytics", "Get analytics").params("account_id", "account").enum("range", ranges...).enum("granularity", granularities...),
		"Engagement totals across the user's published posts in a window: totals, per platform, a series (a point a day up to 31 days, a week up to 120, else a month), and the top posts. "+
			"The window is range, default 7 days (7d); range custom takes since and until (at most 365 days).",
		t.getAnalytics)
	add(t, read("get_post_analytics", "Get a post's analytics"),
		"One post's engagement on each network it was published to (views, likes, comments, shares; null where a network does not report one).",
		t.getPostAnalytics)
}

type analyticsIn struct {
	Range       string `json:"range,omitempty" jsonschema:"the window: 7d, 14d, 28d, 90d or 365d ending now (default 7d), or custom with since and until"`
	Since       string `json:"since,omitempty" jsonschema:"with range custom: the window's start (ISO 8601 with a time zone)"`
	Until       string `json:"until,omitempty" jsonschema:"with range custom: the window's end (ISO 8601 with a time zone; default now)"`
	Account     string `json:"account,omitempty" jsonschema:"only this account: its account_id, or a platform name when the user has exactly one account there"`
	Granularity string `json:"granularity,omitempty" jsonschema:"the series' step (default auto); none leaves the series out"`
	Top         int    `json:"top,omitempty" jsonschema:"how many top posts (default 5, at most 20)"`
	Fresh       bool   `json:"fresh,omitempty" jsonschema:"read the networks again instead of a recent cached answer"`
}

type postAnalyticsIn struct {
	PostID string `json:"post_id" jsonschema:"the post's id"`
	Fresh  bool   `json:"fresh,omitempty" jsonschema:"read the networks again instead of a recent cached answer"`
}

// Counters and Totals are the live data's own (http/live): what /v1 answers, read back.
type (
	Counters = live.Counters
	Totals   = live.Totals
)

// PlatformTotals are one network's counters.
type PlatformTotals struct {
	Platform     string `json:"platform"`
	Publications int    `json:"publications"`
	Counters
}

// Period is one point of the series: the publications published from Start (a UTC date) for one
// step, and their counters.
type Period struct {
	Start        string `json:"start"`
	Publications int    `json:"publications"`
	Totals
}

// TopPost is one of the publications with the most engagement.
type TopPost struct {
	PostID      string    `json:"post_id"`
	Platform    string    `json:"platform"`
	AccountID   string    `json:"account_id"`
	PublishedAt time.Time `json:"published_at"`
	Link        *string   `json:"link,omitempty"`
	Counters
}

// Reconnect is an account whose publications could not be read until it is connected again.
type Reconnect struct {
	AccountID   string  `json:"account_id"`
	Platform    string  `json:"platform"`
	Username    *string `json:"username,omitempty"`
	TokenStatus string  `json:"token_status"`
}

// Analytics answers get_analytics.
type Analytics struct {
	Range            string    `json:"range"`
	Since            time.Time `json:"since"`
	Until            time.Time `json:"until"`
	FetchedAt        time.Time `json:"fetched_at"`
	Publications     int       `json:"publications"`
	PublicationsRead int       `json:"publications_read"`
	// Sampled: the window held more publications than Herald reads; the latest were kept.
	Sampled bool `json:"sampled"`
	// Partial: some publications could not be read in time.
	Partial                  bool             `json:"partial"`
	Totals                   Totals           `json:"totals"`
	ByPlatform               []PlatformTotals `json:"by_platform"`
	Granularity              string           `json:"granularity"`
	Series                   []Period         `json:"series,omitempty"`
	TopPosts                 []TopPost        `json:"top_posts"`
	AccountsNeedingReconnect []Reconnect      `json:"accounts_needing_reconnect,omitempty"`
}

func (t *Tools) getAnalytics(ctx context.Context, in analyticsIn) (Analytics, error) {
	rng := in.Range
	if rng == "" {
		rng = defaultRange
	}
	if rng != "custom" && (in.Since != "" || in.Until != "") {
		return Analytics{}, refuse("since and until: only with range custom")
	}
	top := in.Top
	if top <= 0 {
		top = DefaultTopPosts
	}
	if top > MaxTopPosts {
		return Analytics{}, refuse("top: at most %d", MaxTopPosts)
	}
	acct, err := t.resolveAccount(ctx, "account", in.Account)
	if err != nil {
		return Analytics{}, err
	}
	var v1 live.Overview // GET /v1/analytics/overview as it answers
	if _, err := t.call(ctx, get("/v1/analytics/overview", query("range", rng, "since", in.Since, "until", in.Until, "account_id", acct, "fresh", btoa(in.Fresh))), &v1); err != nil {
		return Analytics{}, err
	}
	out := Analytics{Range: v1.Range, Since: v1.Since, Until: v1.Until, FetchedAt: v1.FetchedAt, Publications: v1.Publications,
		PublicationsRead: v1.PublicationsRead, Sampled: v1.Sampled, Partial: v1.Partial, Totals: v1.Totals,
		ByPlatform: make([]PlatformTotals, 0, len(v1.ByPlatform)), TopPosts: []TopPost{}}
	for _, p := range v1.ByPlatform {
		out.ByPlatform = append(out.ByPlatform, PlatformTotals{Platform: p.Platform, Publications: p.Publications, Counters: p.Counters})
	}
	out.Granularity = in.Granularity
	if out.Granularity == "" || out.Granularity == "auto" {
		days := v1.Until.Sub(v1.Since).Hours() / 24
		switch {
		case days <= 31:
			out.Granularity = "day"
		case days <= 120:
			out.Granularity = "week"
		default:
			out.Granularity = "month"
		}
	}
	if out.Granularity != "none" {
		for _, d := range v1.Series {
			start := periodStart(d.Date, out.Granularity)
			if n := len(out.Series); n > 0 && out.Series[n-1].Start == start {
				p := &out.Series[n-1]
				p.Publications += d.Publications
				p.Views, p.Likes, p.Comments, p.Shares, p.Engagement = p.Views+d.Views, p.Likes+d.Likes, p.Comments+d.Comments, p.Shares+d.Shares, p.Engagement+d.Engagement
				continue
			}
			out.Series = append(out.Series, Period{Start: start, Publications: d.Publications, Totals: d.Totals})
		}
	}
	for i, p := range v1.TopPosts {
		if i == top {
			break
		}
		out.TopPosts = append(out.TopPosts, TopPost{PostID: p.PostID, Platform: p.Platform, AccountID: p.AccountID, PublishedAt: p.PublishedAt, Link: p.Link, Counters: p.Metrics})
	}
	for _, r := range v1.AccountsNeedingReconnect {
		out.AccountsNeedingReconnect = append(out.AccountsNeedingReconnect, Reconnect{AccountID: r.ID, Platform: r.Platform, Username: r.Username, TokenStatus: r.TokenStatus})
	}
	return out, nil
}

// periodStart is the first day of date's step: the day itself, its week's Monday, or its
// month's first day.
func periodStart(date, granularity string) string {
	d, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return date
	}
	switch granularity {
	case "week":
		d = d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
	case "month":
		d = time.Date(d.Year(), d.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return d.Format(time.DateOnly)
}

// PostAnalytics answers get_post_analytics.
type PostAnalytics struct {
	PostID       string            `json:"post_id"`
	FetchedAt    time.Time         `json:"fetched_at"`
	Partial      bool              `json:"partial"`
	Totals       Totals            `json:"totals"`
	Publications []PostPublication `json:"publications"`
	Reconnect    []Reconnect       `json:"accounts_needing_reconnect,omitempty"`
}

// PostPublication is one publication of a post and its counters.
type PostPublication struct {
	PublicationID string  `json:"publication_id"`
	Platform      string  `json:"platform"`
	AccountID     string  `json:"account_id"`
	Link          *string `json:"link,omitempty"`
	Counters
	// Reason says why the counters are null (a network without live analytics, a failed read).
	Reason string `json:"reason,omitempty"`
}

func (t *Tools) getPostAnalytics(ctx context.Context, in postAnalyticsIn) (PostAnalytics, error) {
	var v1 struct {
		PostID       string    `json:"post_id"`
		FetchedAt    time.Time `json:"fetched_at"`
		Partial      bool      `json:"partial"`
		Totals       Totals    `json:"totals"`
		Publications []struct {
			PublicationID   string  `json:"publication_id"`
			Platform        string  `json:"platform"`
			AccountID       string  `json:"connected_account_id"`
			PlatformPostURL *string `json:"platform_post_url"`
			Views           *int64  `json:"views"`
			Likes           *int64  `json:"likes"`
			Comments        *int64  `json:"comments"`
			Shares          *int64  `json:"shares"`
			Engagement      *int64  `json:"engagement"`
			Reason          string  `json:"reason"`
		} `json:"publications"`
		AccountsNeedingReconnect []struct {
			ID          string  `json:"id"`
			Platform    string  `json:"platform"`
			Username    *string `json:"username"`
			TokenStatus string  `json:"token_status"`
		} `json:"accounts_needing_reconnect"`
	}
	if _, err := t.call(ctx, get("/v1/analytics/posts/"+esc(in.PostID), query("fresh", btoa(in.Fresh))), &v1); err != nil {
		return PostAnalytics{}, err
	}
	out := PostAnalytics{PostID: v1.PostID, FetchedAt: v1.FetchedAt, Partial: v1.Partial, Totals: v1.Totals, Publications: []PostPublication{}}
	for _, p := range v1.Publications {
		c := Counters{Views: p.Views, Likes: p.Likes, Comments: p.Comments, Shares: p.Shares}
		if p.Engagement != nil {
			c.Engagement = *p.Engagement
		}
		out.Publications = append(out.Publications, PostPublication{PublicationID: p.PublicationID, Platform: p.Platform, AccountID: p.AccountID,
			Link: p.PlatformPostURL, Counters: c, Reason: p.Reason})
	}
	for _, r := range v1.AccountsNeedingReconnect {
		out.Reconnect = append(out.Reconnect, Reconnect{AccountID: r.ID, Platform: r.Platform, Username: r.Username, TokenStatus: r.TokenStatus})
	}
	return out, nil
}
