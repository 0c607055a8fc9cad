package web

import (
	"sort"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/actors/account"
	"github.com/heraldhq/herald/http/api"
	"github.com/heraldhq/herald/persistence"
)

// accountRow is a connected account with its token health (the view of GET /v1/accounts) and
// what the user should do about it.
type accountRow struct {
	api.Account
	Name string
	// Advice says what to do ("" when nothing); Urgent marks an account that no longer
	// publishes.
	Advice string
	Urgent bool
	Reason string
	// Browser is true for the networks connected through the browser (reconnect there).
	Browser bool
}

func accountRows(list []*persistence.Account, now time.Time, zone *time.Location) []accountRow {
	out := make([]accountRow, 0, len(list))
	for _, a := range list {
		v := api.AccountView(a, now)
		r := accountRow{Account: v, Name: networkName(a.Platform), Reason: a.ReconnectReason,
			Browser: a.Platform != "twitter_x" && a.Platform != "bluesky"}
		switch *v.TokenStatus {
		case account.TokenExpired:
			r.Advice, r.Urgent = "Reconnect now: Herald can no longer publish to this account.", true
		case account.TokenExpiringSoon:
			when := "soon"
			if v.TokenExpiresAt != nil {
				when = "before " + formatWhen(*v.TokenExpiresAt, zone)
			}
			r.Advice = "Reconnect " + when + " to keep publishing."
		}
		if !a.IsActive && r.Advice == "" {
			r.Advice, r.Urgent = "This account is inactive: reconnect it to publish.", true
		}
		out = append(out, r)
	}
	return out
}

// jobRow is one recent publish job.
type jobRow struct {
	Job     *persistence.Job
	Post    *persistence.Post
	Done    int
	Failed  int
	Total   int
	Pending int
}

// Status is the job's status as a person reads it: a job that completed with some of its
// targets failed is "partial", not a green "completed".
func (r jobRow) Status() string {
	if r.Job.Status == persistence.JobCompleted && r.Failed > 0 {
		return persistence.PostPartial
	}
	return r.Job.Status
}

// usage is the hour's API requests against the plan's quota.
type usage struct {
	Plan         string
	Used, Limit  int
	Percent      int
	ResetMinutes int
}

// postQuota is the free plan's monthly post quota.
type postQuota struct {
	Used, Limit int
	Month       string
	Percent     int
}

type overviewData struct {
	Accounts []accountRow
	Jobs     []jobRow
	Usage    usage
	Quota    *postQuota
	Drafts   int
	Sched    int
	// Attention is what needs the user: posts that failed on some or all of their networks
	// (newest first) and the accounts to reconnect (Accounts' Advice).
	Attention []*persistence.Post
	Reconnect []accountRow
	// Upcoming are the next scheduled posts, soonest first.
	Upcoming []*persistence.Post
}

// overviewList bounds the failed posts and the upcoming posts the overview lists; upcomingScan
// bounds the schedule entries (every workspace's) it walks to find the soonest of its workspace.
const (
	overviewList = 5
	upcomingScan = 20000
)

// recentJobs is how many of the latest posts the overview looks at for their jobs.
const recentJobs = 8

// overview is GET /: a "Create post" button, what needs attention (failed and partly failed
// posts, accounts to reconnect), the next scheduled posts, accounts and their token health, the
// latest jobs, the hour's API usage and
// the free plan's post quota.
func (p *pages) overview(c *echo.Context) error {
	v := p.newView(c, "Overview", "overview", nil)
	u := v.User
	d := overviewData{}
	now := p.Now()
	err := p.Store.View(func(tx *persistence.Tx) error {
		list, err := tx.AccountsIn(v.Scope)
		if err != nil {
			return err
		}
		d.Accounts = accountRows(list, now, v.Zone)
		posts, _, err := tx.ListPosts(persistence.PostFilter{Scope: v.Scope, Limit: recentJobs})
		if err != nil {
			return err
		}
		for _, po := range posts {
			if po.TrackingID == nil {
				continue
			}
			j, err := tx.Job(*po.TrackingID)
			if err != nil {
				continue // a post whose job was pruned
			}
			done, failed := j.Counts()
			d.Jobs = append(d.Jobs, jobRow{Job: j, Post: po, Done: done, Failed: failed, Total: len(j.Targets),
				Pending: len(j.Targets) - done - failed})
		}
		for _, a := range d.Accounts {
			if a.Advice != "" {
				d.Reconnect = append(d.Reconnect, a)
			}
		}
		for _, st := range []string{persistence.PostFailed, persistence.PostPartial} {
			list, _, err := tx.ListPosts(persistence.PostFilter{Scope: v.Scope, Status: st, Limit: overviewList})
			if err != nil {
				return err
			}
			d.Attention = append(d.Attention, list...)
		}
		sort.SliceStable(d.Attention, func(i, j int) bool { return d.Attention[i].UpdatedAt.After(d.Attention[j].UpdatedAt) })
		if len(d.Attention) > overviewList {
			d.Attention = d.Attention[:overviewList]
		}
		for _, due := range tx.ScheduledIn(v.Scope, time.Time{}, overviewList, upcomingScan) {
			if po, err := tx.Post(due.PostID); err == nil && po.Status == persistence.PostScheduled {
				d.Upcoming = append(d.Upcoming, po)
			}
		}
		d.Drafts = tx.PostCount(v.Scope, persistence.PostDraft, "")
		d.Sched = tx.PostCount(v.Scope, persistence.PostScheduled, "")
		if u.Plan == "free" && p.FreePostQuota > 0 {
			month := now.UTC().Format("2006-01")
			used := tx.QuotaUsed(u.ID, month)
			d.Quota = &postQuota{Used: used, Limit: p.FreePostQuota, Month: now.UTC().Format("January 2006"),
				Percent: percent(used, p.FreePostQuota)}
		}
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	used, limit, reset := p.Server.Usage(u.ID, u.Plan)
	d.Usage = usage{Plan: u.Plan, Used: used, Limit: limit, Percent: percent(used, limit), ResetMinutes: int((reset + time.Minute - 1) / time.Minute)}
	v.Data = d
	return p.render(c, 200, "overview", v)
}

func percent(used, limit int) int {
	if limit <= 0 {
		return 0
	}
	pc := used * 100 / limit
	if pc > 100 {
		pc = 100
	}
	return pc
}
