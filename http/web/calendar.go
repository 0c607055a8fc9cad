package web

import (
	"sort"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/persistence"
)

// calendarScan bounds the posts of each status the calendar reads (newest first).
const calendarScan = 2000

type calPost struct {
	ID, Status, Text string
	At               time.Time
	Clock            string
}

type calDay struct {
	Date    time.Time
	Label   string
	InRange bool
	Today   bool
	Posts   []calPost
}

type calendarData struct {
	View        string // week or month
	Title       string
	Weeks       [][]calDay
	Prev, Next  string
	Today       string
	WeekdayHead []string
}

// calendar is GET /calendar?view=week|month&date=YYYY-MM-DD: scheduled posts at their time and
// published ones at their first publication, by week (Monday first) or month, in the user's
// zone.
func (p *pages) calendar(c *echo.Context) error {
	v := p.newView(c, "Calendar", "calendar", nil)
	zone := v.Zone
	now := v.Now.In(zone)
	d := calendarData{View: c.QueryParam("view")}
	if d.View != "week" {
		d.View = "month"
	}
	anchor := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, zone)
	if t, err := time.ParseInLocation("2006-01-02", c.QueryParam("date"), zone); err == nil {
		anchor = t
	}
	var from, to, rangeFrom, rangeTo time.Time
	if d.View == "week" {
		from = mondayOf(anchor)
		to = from.AddDate(0, 0, 7)
		rangeFrom, rangeTo = from, to
		d.Title = "Week of " + from.Format("2 January 2006")
		d.Prev, d.Next = calLink("week", from.AddDate(0, 0, -7)), calLink("week", from.AddDate(0, 0, 7))
	} else {
		first := time.Date(anchor.Year(), anchor.Month(), 1, 0, 0, 0, 0, zone)
		rangeFrom, rangeTo = first, first.AddDate(0, 1, 0)
		from = mondayOf(first)
		to = mondayOf(rangeTo.AddDate(0, 0, -1)).AddDate(0, 0, 7)
		d.Title = first.Format("January 2006")
		d.Prev, d.Next = calLink("month", first.AddDate(0, -1, 0)), calLink("month", first.AddDate(0, 1, 0))
	}
	d.Today = calLink(d.View, now)
	for _, wd := range []time.Weekday{1, 2, 3, 4, 5, 6, 0} {
		d.WeekdayHead = append(d.WeekdayHead, wd.String())
	}
	var posts []calPost
	err := p.Store.View(func(tx *persistence.Tx) error {
		for _, st := range []string{persistence.PostScheduled, persistence.PostPublished, persistence.PostPartial, persistence.PostPublishing} {
			list, _, err := tx.ListPosts(persistence.PostFilter{Scope: v.Scope, Status: st, Limit: calendarScan})
			if err != nil {
				return err
			}
			for _, po := range list {
				at := postTime(po)
				if at.IsZero() || at.Before(from) || !at.Before(to) {
					continue
				}
				posts = append(posts, calPost{ID: po.ID, Status: po.Status, Text: excerpt(po.Content, 60), At: at, Clock: at.In(zone).Format("15:04")})
			}
		}
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	sort.Slice(posts, func(i, j int) bool { return posts[i].At.Before(posts[j].At) })
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, zone)
	for day := from; day.Before(to); day = day.AddDate(0, 0, 1) {
		if len(d.Weeks) == 0 || len(d.Weeks[len(d.Weeks)-1]) == 7 {
			d.Weeks = append(d.Weeks, nil)
		}
		cd := calDay{Date: day, Label: day.Format("Mon 2 Jan"), InRange: !day.Before(rangeFrom) && day.Before(rangeTo), Today: day.Equal(today)}
		end := day.AddDate(0, 0, 1)
		for _, cp := range posts {
			if !cp.At.Before(day) && cp.At.Before(end) {
				cd.Posts = append(cd.Posts, cp)
			}
		}
		d.Weeks[len(d.Weeks)-1] = append(d.Weeks[len(d.Weeks)-1], cd)
	}
	v.Data = d
	return p.render(c, 200, "calendar", v)
}

// postTime is where a post sits in the calendar: its schedule, else its first publication,
// else its last change.
func postTime(po *persistence.Post) time.Time {
	if po.Status == persistence.PostScheduled && po.ScheduledAt != nil {
		return *po.ScheduledAt
	}
	var first time.Time
	for _, t := range po.Targets {
		if t.PublishedAt != nil && (first.IsZero() || t.PublishedAt.Before(first)) {
			first = *t.PublishedAt
		}
	}
	if first.IsZero() {
		first = po.UpdatedAt
	}
	return first
}

func mondayOf(t time.Time) time.Time {
	off := (int(t.Weekday()) + 6) % 7
	return time.Date(t.Year(), t.Month(), t.Day()-off, 0, 0, 0, 0, t.Location())
}

func calLink(view string, t time.Time) string {
	return "/calendar?view=" + view + "&date=" + t.Format("2006-01-02")
}
