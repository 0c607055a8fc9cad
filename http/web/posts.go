package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// postsPerPage is the length of a page of the posts list.
const postsPerPage = 20

var postStatuses = persistence.PostStatuses

type postsData struct {
	Posts []*persistence.Post
	// Campaigns names the posts' campaigns (campaignNames).
	Campaigns                map[string]string
	Status, Platform, Search string
	Statuses, Networks       []string
	Page, Pages, Total       int
	Prev, Next               string
}

// posts is GET /posts?status=&platform=&search=&page=: the user's posts, newest first.
func (p *pages) posts(c *echo.Context) error {
	v := p.newView(c, "Posts", "posts", nil)
	q := c.Request().URL.Query()
	d := postsData{Status: q.Get("status"), Platform: q.Get("platform"), Search: strings.TrimSpace(q.Get("search")),
		Statuses: postStatuses, Networks: allNetworks(), Page: 1}
	if !contains(postStatuses, d.Status) {
		d.Status = ""
	}
	if !contains(d.Networks, d.Platform) {
		d.Platform = ""
	}
	if len(d.Search) > 500 {
		d.Search = d.Search[:500]
	}
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 0 && n < 1_000_000 {
		d.Page = n
	}
	err := p.Store.View(func(tx *persistence.Tx) error {
		var err error
		d.Posts, d.Total, err = tx.ListPosts(persistence.PostFilter{Scope: v.Scope, Status: d.Status, Platform: d.Platform,
			Search: d.Search, Offset: (d.Page - 1) * postsPerPage, Limit: postsPerPage})
		if err != nil {
			return err
		}
		d.Campaigns = campaignNames(tx, d.Posts...)
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	d.Pages = (d.Total + postsPerPage - 1) / postsPerPage
	link := func(page int) string {
		u := url.Values{}
		for k, val := range map[string]string{"status": d.Status, "platform": d.Platform, "search": d.Search} {
			if val != "" {
				u.Set(k, val)
			}
		}
		u.Set("page", strconv.Itoa(page))
		return "/posts?" + u.Encode()
	}
	if d.Page > 1 {
		d.Prev = link(d.Page - 1)
	}
	if d.Page < d.Pages {
		d.Next = link(d.Page + 1)
	}
	v.Data = d
	return p.render(c, 200, "posts", v)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type targetRow struct {
	persistence.Target
	Name     string
	Username string
	// Phase and Message are the latest job's word on the target.
	Phase, Message string
}

type postData struct {
	Post    *persistence.Post
	Targets []targetRow
	Job     *persistence.Job
	// Campaign is the name of the post's campaign ("" for a post created alone).
	Campaign string
	Editable bool
	// CanDelete: the post may be deleted (a draft, scheduled, failed, partial or held post) by
	// this person (an admin or above, or a key's or the owner's session).
	CanDelete bool
	// Draft is true for a draft (published now or scheduled from its page), Reschedule for a
	// scheduled post (its time and zone changed there); Date, Time and ZoneName prefill the
	// schedule form: the post's own time and zone, else the next full hour in the user's zone.
	Draft, Reschedule    bool
	Date, Time, ZoneName string
	// Retry is true when some targets failed: publishing again sends to those only.
	Retry bool
	// Analytics is true when a target is published: the page's script reads its live counters
	// (GET /api/analytics/posts/:id) once the page shows, so that the page waits for no network.
	Analytics bool
}

// post is GET /posts/:id: per-network status, errors and links, the events timeline (read by
// the page's script from GET /api/posts/:id/events), publish again, edit and delete.
func (p *pages) post(c *echo.Context) error {
	v := p.newView(c, "Post", "posts", nil)
	var d postData
	id := c.Param("id")
	if _, err := persistence.ID(id); err != nil {
		return p.fail(c, http.StatusNotFound, "There is no such post.")
	}
	err := p.Store.View(func(tx *persistence.Tx) error {
		po, err := tx.Post(id)
		if err != nil {
			return err
		}
		if po.Scope() != v.Scope {
			return persistence.ErrNotFound
		}
		d.Post = po
		d.Campaign = campaignNames(tx, po)[po.CampaignID]
		if po.TrackingID != nil {
			if j, err := tx.Job(*po.TrackingID); err == nil {
				d.Job = j
			}
		}
		for i, t := range po.Targets {
			r := targetRow{Target: t, Name: networkName(t.Platform)}
			if a, err := tx.Account(t.AccountID); err == nil && a.Username != nil {
				r.Username = *a.Username
			}
			if d.Job != nil {
				for _, jt := range d.Job.Targets {
					if jt.Target == i {
						r.Phase, r.Message = jt.Phase, jt.Message
					}
				}
			}
			d.Analytics = d.Analytics || (t.Status == persistence.TargetPublished && t.PublicationID != "")
			if t.Status == persistence.TargetFailed || t.Missing() {
				d.Retry = true
			}
			d.Targets = append(d.Targets, r)
		}
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	// A failed or partial post is edited to fix what failed before it is sent again (post.Edit).
	// Each action is offered only to whom its operation's role lets call it (api.MayDo).
	pr := server.Principal(c)
	switch d.Post.Status {
	case persistence.PostDraft, persistence.PostScheduled, persistence.PostFailed, persistence.PostPartial:
		d.Editable = api.MayDo(pr, http.MethodPatch, "/posts/:id")
	}
	d.CanDelete = api.MayDo(pr, http.MethodDelete, "/posts/:id") && (d.Editable || d.Post.Status == persistence.PostPendingApproval)
	mayPublish := api.MayDo(pr, http.MethodPost, "/posts/:id/publish")
	d.Draft = d.Post.Status == persistence.PostDraft && mayPublish
	d.Reschedule = d.Post.Status == persistence.PostScheduled && api.MayDo(pr, http.MethodPost, "/posts/:id/schedule")
	loc := v.Zone
	if z := d.Post.ScheduledZone; z != "" {
		if l, err := time.LoadLocation(z); err == nil {
			loc = l
		}
	}
	at := v.Now.In(loc).Truncate(time.Hour).Add(time.Hour)
	if d.Reschedule && d.Post.ScheduledAt != nil {
		at = d.Post.ScheduledAt.In(loc)
	}
	d.Date, d.Time, d.ZoneName = at.Format("2006-01-02"), at.Format("15:04"), loc.String()
	d.Retry = d.Retry && mayPublish && (d.Post.Status == persistence.PostFailed || d.Post.Status == persistence.PostPartial || d.Post.Status == persistence.PostPublished)
	v.Data = d
	return p.render(c, http.StatusOK, "post", v)
}
