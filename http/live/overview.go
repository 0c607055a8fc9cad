package live

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cache"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Overview is GET /v1/analytics/overview. Counters are the networks' lifetime counters of each
// publication read; a counter a network does not report is null where it is shown per
// publication or per platform, and adds nothing to the sums.
type Overview struct {
	Range     string    `json:"range"`
	Since     time.Time `json:"since"`
	Until     time.Time `json:"until"`
	FetchedAt time.Time `json:"fetched_at"`
	// Sampled: the window held more than SampleLimit publications; only the latest were kept.
	Sampled     bool `json:"sampled"`
	SampleLimit int  `json:"sample_limit"`
	// Partial: some kept publications could not be read within the request's budget.
	Partial bool `json:"partial"`
	// Publications is how many publications the window holds; PublicationsRead how many were
	// read.
	Publications             int              `json:"publications"`
	PublicationsRead         int              `json:"publications_read"`
	Totals                   Totals           `json:"totals"`
	ByPlatform               []PlatformTotals `json:"by_platform"`
	Series                   []Day            `json:"series"`
	TopPosts                 []TopPost        `json:"top_posts"`
	AccountsNeedingReconnect []Reconnect      `json:"accounts_needing_reconnect"`
}

// Totals sum the counters of every publication read. Engagement is likes + comments + shares.
type Totals struct {
	Views      int64 `json:"views"`
	Likes      int64 `json:"likes"`
	Comments   int64 `json:"comments"`
	Shares     int64 `json:"shares"`
	Engagement int64 `json:"engagement"`
}

// Counters are one publication's or one platform's counters; null when the network does not
// report it (Bluesky has no views, for example).
type Counters struct {
	Views      *int64 `json:"views"`
	Likes      *int64 `json:"likes"`
	Comments   *int64 `json:"comments"`
	Shares     *int64 `json:"shares"`
	Engagement int64  `json:"engagement"`
}

// PlatformTotals are the counters of one network's publications read. PostCount and Metrics
// say the same as Publications and the counters beside them, in the element shape the
// service's own clients read (docs/live-data.md).
type PlatformTotals struct {
	Platform     string `json:"platform"`
	Publications int    `json:"publications"`
	Counters
	PostCount int      `json:"post_count"`
	Metrics   Counters `json:"metrics"`
}

// Day is one UTC day of the window: the publications published that day and their counters.
type Day struct {
	Date         string `json:"date"`
	Publications int    `json:"publications"`
	Totals
}

// TopPost is one of the publications with the most engagement.
type TopPost struct {
	PostID      string    `json:"post_id"`
	Platform    string    `json:"platform"`
	AccountID   string    `json:"account_id"`
	PublishedAt time.Time `json:"published_at"`
	Link        *string   `json:"link"`
	// Snippet is the start of the post's text (Snippet).
	Snippet string   `json:"snippet"`
	Metrics Counters `json:"metrics"`
}

// Reconnect is an account whose token is expired or refused: its publications were not read.
type Reconnect struct {
	ID          string  `json:"id"`
	Platform    string  `json:"platform"`
	Username    *string `json:"username"`
	TokenStatus string  `json:"token_status"`
}

// OverviewQuery is a validated overview request.
type OverviewQuery struct {
	Window    Window
	AccountID string
	Fresh     bool
}

func (q OverviewQuery) key(scope string) string {
	return cache.Key(scope, "overview;"+q.Window.key()+";a="+q.AccountID)
}

// Overview answers an overview request: the cached body when the cache's rules allow, else a
// fan-out. The body is the JSON of Overview.
func (s *Service) Overview(ctx context.Context, scope string, q OverviewQuery) ([]byte, error) {
	e, err := s.overviews.Get(ctx, q.key(scope), q.Fresh, func(ctx context.Context) ([]byte, error) {
		return s.fillOverview(ctx, scope, q)
	})
	return e.Value, err
}

func (s *Service) fillOverview(ctx context.Context, scope string, q OverviewQuery) ([]byte, error) {
	now := s.cfg.Now().UTC()
	w := q.Window
	if w.Range != "custom" {
		// A named range ends when it is fetched.
		w, _ = ParseWindow(w.Range, "", "", now)
	}
	names := make([]string, len(AnalyticsPlatforms))
	for i, p := range AnalyticsPlatforms {
		names[i] = string(p)
	}
	var pubs []persistence.Publication
	if err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		var err error
		pubs, err = tx.Publications(persistence.PublicationFilter{Scope: scope, Platforms: names, AccountID: q.AccountID, Since: w.Since, Until: w.Until})
		return err
	}); err != nil {
		return nil, err
	}
	ov := &Overview{Range: w.Range, Since: w.Since, Until: w.Until, SampleLimit: s.cfg.SampleLimit, Publications: len(pubs)}
	if len(pubs) > s.cfg.SampleLimit {
		ov.Sampled = true
		pubs = pubs[:s.cfg.SampleLimit]
	}
	fctx, cancel := context.WithTimeout(ctx, s.cfg.Deadline)
	outcomes := s.fanOut(fctx, "analytics", scope, account.OpMetrics, pubs, s.cfg.Calls)
	cancel()

	days := map[string]*Day{}
	for d := w.Since.Truncate(24 * time.Hour); !d.After(w.Until); d = d.Add(24 * time.Hour) {
		key := d.Format(time.DateOnly)
		ov.Series = append(ov.Series, Day{Date: key})
		days[key] = &ov.Series[len(ov.Series)-1]
	}
	platformTotals := map[string]*PlatformTotals{}
	var top []TopPost
	reconnectIDs := map[string]bool{}
	for i, o := range outcomes {
		p := pubs[i]
		switch o.state {
		case notRead:
			ov.Partial = true
			continue
		case reconnect:
			reconnectIDs[p.AccountID] = true
			continue
		case gone:
			continue
		}
		ov.PublicationsRead++
		c := counters(o.reply.Metrics)
		ov.Totals.add(c)
		if d := days[p.PublishedAt.UTC().Format(time.DateOnly)]; d != nil {
			d.Publications++
			d.Totals.add(c)
		}
		pt := platformTotals[p.Platform]
		if pt == nil {
			pt = &PlatformTotals{Platform: p.Platform}
			platformTotals[p.Platform] = pt
		}
		pt.Publications++
		pt.Counters.add(c)
		top = append(top, TopPost{PostID: p.PostID, Platform: p.Platform, AccountID: p.AccountID, PublishedAt: p.PublishedAt, Metrics: c})
	}
	ov.ByPlatform = []PlatformTotals{}
	for _, p := range platforms.All {
		if pt := platformTotals[string(p)]; pt != nil {
			pt.PostCount, pt.Metrics = pt.Publications, pt.Counters
			ov.ByPlatform = append(ov.ByPlatform, *pt)
		}
	}
	slices.SortStableFunc(top, func(a, b TopPost) int {
		if c := cmp.Compare(b.Metrics.Engagement, a.Metrics.Engagement); c != 0 {
			return c
		}
		if c := cmp.Compare(deref(b.Metrics.Views), deref(a.Metrics.Views)); c != 0 {
			return c
		}
		return b.PublishedAt.Compare(a.PublishedAt)
	})
	if len(top) > TopPosts {
		top = top[:TopPosts]
	}
	var reconnects []Reconnect
	if err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		for i := range top {
			top[i].Snippet = postSnippet(tx, top[i].PostID)
			for _, p := range pubs {
				if p.PostID == top[i].PostID && p.Platform == top[i].Platform && p.AccountID == top[i].AccountID {
					if link := tx.PublicationLink(p.TrackingID, p.Target); link != "" {
						top[i].Link = &link
					}
					break
				}
			}
		}
		var err error
		reconnects, err = reconnectList(tx, scope, names, q.AccountID, reconnectIDs, now)
		return err
	}); err != nil {
		return nil, err
	}
	ov.TopPosts = append([]TopPost{}, top...)
	ov.AccountsNeedingReconnect = reconnects
	for _, id := range reconnects {
		s.metrics.reconnect.WithLabelValues(id.Platform).Inc()
	}
	if ov.Partial {
		s.metrics.partial.WithLabelValues("analytics").Inc()
	}
	if ov.Sampled {
		s.metrics.sampled.WithLabelValues("analytics").Inc()
	}
	ov.FetchedAt = s.cfg.Now().UTC()
	return json.Marshal(ov)
}

// reconnectList is accounts_needing_reconnect: the user's accounts in the request's scope (on
// one of the networks, the one account when accountID is set) whose token_status is expired by
// the rule of GET /v1/accounts (account.TokenStatus: a refresh refused for good, or the horizon
// past), and the accounts the fan-out found refused (ids), in id order.
func reconnectList(tx *persistence.Tx, scope string, networks []string, accountID string, ids map[string]bool, now time.Time) ([]Reconnect, error) {
	accounts, err := tx.AccountsIn(scope)
	if err != nil {
		return nil, err
	}
	out := []Reconnect{}
	for _, a := range accounts {
		inScope := slices.Contains(networks, a.Platform) && (accountID == "" || a.ID == accountID)
		if ids[a.ID] || (inScope && account.TokenStatus(a, now) == account.TokenExpired) {
			// Either way its token no longer works until it is connected again.
			out = append(out, Reconnect{ID: a.ID, Platform: a.Platform, Username: a.Username, TokenStatus: account.TokenExpired})
		}
	}
	slices.SortFunc(out, func(a, b Reconnect) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

func counters(m platforms.Metrics) Counters {
	c := Counters{Views: m.Views, Likes: m.Likes, Comments: m.Comments, Shares: m.Shares}
	c.Engagement = deref(m.Likes) + deref(m.Comments) + deref(m.Shares)
	return c
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func (t *Totals) add(c Counters) {
	t.Views += deref(c.Views)
	t.Likes += deref(c.Likes)
	t.Comments += deref(c.Comments)
	t.Shares += deref(c.Shares)
	t.Engagement += c.Engagement
}

// add sums counters, keeping null only while no publication reported the counter.
func (c *Counters) add(o Counters) {
	sum := func(dst **int64, v *int64) {
		if v == nil {
			return
		}
		if *dst == nil {
			n := int64(0)
			*dst = &n
		}
		**dst += *v
	}
	sum(&c.Views, o.Views)
	sum(&c.Likes, o.Likes)
	sum(&c.Comments, o.Comments)
	sum(&c.Shares, o.Shares)
	c.Engagement += o.Engagement
}
