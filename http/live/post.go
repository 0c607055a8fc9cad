package live

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/cache"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// PostAnalytics is GET /v1/analytics/posts/:postId: the live counters of each publication of
// one post (each of its targets published on its network), in the post's target order. A post
// with no publication (a draft, a scheduled or failed post, one still publishing its first
// target) has no analytics yet: its publications are empty.
type PostAnalytics struct {
	PostID    string    `json:"post_id"`
	FetchedAt time.Time `json:"fetched_at"`
	// Partial: some publication on a live network could not be read within the request's
	// budget (its reason says why).
	Partial      bool              `json:"partial"`
	Publications []PostPublication `json:"publications"`
	// Totals sum the counters of the publications read, as the overview's do.
	Totals                   Totals      `json:"totals"`
	AccountsNeedingReconnect []Reconnect `json:"accounts_needing_reconnect"`
}

// PostPublication is one publication of the post and its counters. Live says whether its
// network has live analytics; the counters are null when the publication was not read (Reason
// says why), and each one the network does not report is null.
type PostPublication struct {
	PublicationID      string    `json:"publication_id"`
	Platform           string    `json:"platform"`
	ConnectedAccountID string    `json:"connected_account_id"`
	PlatformPostID     string    `json:"platform_post_id"`
	PlatformPostURL    *string   `json:"platform_post_url"`
	PublishedAt        time.Time `json:"published_at"`
	Live               bool      `json:"live"`
	Views              *int64    `json:"views"`
	Likes              *int64    `json:"likes"`
	Comments           *int64    `json:"comments"`
	Shares             *int64    `json:"shares"`
	Engagement         *int64    `json:"engagement"`
	Reason             string    `json:"reason,omitempty"`
}

// PostQuery is a validated per-post analytics request: the post as the caller may see it (the
// handler read it as GET /v1/posts/:id does).
type PostQuery struct {
	Post  *persistence.Post
	Fresh bool
}

// key is per post and version: a post that publishes more targets is another entry.
func (q PostQuery) key(scope string) string {
	return cache.Key(scope, "post;"+q.Post.ID+";v="+strconv.FormatUint(q.Post.Version, 36))
}

// PostAnalytics answers a per-post request with the overview's rules: the cached body when the
// cache's rules allow (the analytics cache: 90-second floor, fresh, singleflight), else a
// fan-out over the post's publications on live networks, within the live request budget. A
// post with no publication is answered at once, without the cache (there is nothing to read).
func (s *Service) PostAnalytics(ctx context.Context, scope string, q PostQuery) ([]byte, error) {
	if len(postPublications(q.Post)) == 0 {
		return json.Marshal(&PostAnalytics{PostID: q.Post.ID, FetchedAt: s.cfg.Now().UTC(), Publications: []PostPublication{},
			AccountsNeedingReconnect: []Reconnect{}})
	}
	e, err := s.overviews.Get(ctx, q.key(scope), q.Fresh, func(ctx context.Context) ([]byte, error) {
		return s.fillPost(ctx, scope, q.Post)
	})
	return e.Value, err
}

// postPublications lists the post's targets published on their network.
func postPublications(p *persistence.Post) []persistence.Publication {
	var out []persistence.Publication
	tracking := ""
	if p.TrackingID != nil {
		tracking = *p.TrackingID
	}
	for i, t := range p.Targets {
		if t.Status != persistence.TargetPublished || t.PublicationID == "" {
			continue
		}
		at := p.UpdatedAt
		if t.PublishedAt != nil {
			at = *t.PublishedAt
		}
		out = append(out, persistence.Publication{ID: persistence.PublicationUUID(p.ID, i), PostID: p.ID, AccountID: t.AccountID,
			Platform: t.Platform, Target: i, NetworkID: t.PublicationID, PublishedAt: at.UTC(), TrackingID: tracking})
	}
	return out
}

func (s *Service) fillPost(ctx context.Context, scope string, p *persistence.Post) ([]byte, error) {
	all := postPublications(p)
	var wanted []persistence.Publication
	for _, pub := range all {
		if slices.Contains(AnalyticsPlatforms, platforms.Platform(pub.Platform)) {
			wanted = append(wanted, pub)
		}
	}
	fctx, cancel := context.WithTimeout(ctx, s.cfg.Deadline)
	outcomes := s.fanOut(fctx, "analytics", scope, account.OpMetrics, wanted, s.cfg.Calls)
	cancel()

	pa := &PostAnalytics{PostID: p.ID, Publications: make([]PostPublication, 0, len(all))}
	reconnectIDs := map[string]bool{}
	k := 0
	err := s.cfg.Store.View(func(tx *persistence.Tx) error {
		for _, pub := range all {
			out := PostPublication{PublicationID: pub.ID, Platform: pub.Platform, ConnectedAccountID: pub.AccountID,
				PlatformPostID: pub.NetworkID, PublishedAt: pub.PublishedAt}
			link := p.Targets[pub.Target].URL
			if link == "" {
				link = tx.PublicationLink(pub.TrackingID, pub.Target)
			}
			if link != "" {
				out.PlatformPostURL = &link
			}
			if k < len(wanted) && wanted[k].Target == pub.Target {
				out.Live = true
				o := outcomes[k]
				k++
				switch o.state {
				case read:
					c := counters(o.reply.Metrics)
					out.Views, out.Likes, out.Comments, out.Shares = c.Views, c.Likes, c.Comments, c.Shares
					out.Engagement = &c.Engagement
					pa.Totals.add(c)
				case reconnect:
					reconnectIDs[pub.AccountID] = true
					out.Reason = "not read: the connected account must be connected again (see accounts_needing_reconnect)"
				case gone:
					out.Reason = fmt.Sprintf("not read: %s no longer has the post, or the connected account was disconnected", pub.Platform)
				default:
					pa.Partial = true
					out.Reason = "not read: " + unreadReason(o.reason)
				}
			} else {
				out.Reason = fmt.Sprintf("%s has no live analytics in Herald; the live networks are %s", pub.Platform, platformList(AnalyticsPlatforms))
			}
			pa.Publications = append(pa.Publications, out)
		}
		// The accounts whose reads answered that they must be connected again (the rule of
		// reconnectReason, which reads the durable mark first).
		var err error
		pa.AccountsNeedingReconnect, err = reconnectList(tx, scope, nil, "", reconnectIDs, s.cfg.Now())
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, r := range pa.AccountsNeedingReconnect {
		s.metrics.reconnect.WithLabelValues(r.Platform).Inc()
	}
	if pa.Partial {
		s.metrics.partial.WithLabelValues("analytics").Inc()
	}
	pa.FetchedAt = s.cfg.Now().UTC()
	return json.Marshal(pa)
}

// unreadReason says in plain words why a publication was not read (outcome.reason).
func unreadReason(reason string) string {
	switch reason {
	case "request_budget":
		return "the request's live budget of network calls ran out"
	case "deadline":
		return "the network did not answer within the request's live deadline"
	case "rate_budget":
		return "the account's rate budget for reads on the network is spent for now"
	}
	return "the network failed to answer"
}
