package web

import (
	"sort"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/persistence"
)

// calendarScan bounds the scheduled posts the calendar reads from the schedule, and the others
// it reads from the list index (persistence.Tx.CalendarPosts).
const calendarScan = 2000

// A month's day shows monthShown posts and a week's hour hourShown; the rest are behind a
// "+N more" that opens in place (a <details>, so it needs no script).
const (
	monthShown = 3
	hourShown  = 2
)

type calPost struct {
	ID, Status, Text string
	At               time.Time
	Clock            string
	// Networks are the post's networks, once each, in the order of its targets (their icons).
	Networks []string
	// Movable says whether the post can be moved to another time (a scheduled post, and a
	// person whose role may schedule).
	Movable bool
}

// calPosts are the posts of a day or an hour: Shown first, the rest behind "+N more".
type calPosts struct {
	Shown, More []calPost
}

func splitPosts(list []calPost, n int) calPosts {
	if len(list) <= n {
		return calPosts{Shown: list}
	}
	// n-1 shown and the "+N more" line in the n-th place: never a "+1 more" hiding one post.
	return calPosts{Shown: list[:n-1], More: list[n-1:]}
}

// calSlot is one hour of a day in the week view.
type calSlot struct {
	Hour  int
	Label string
	Posts calPosts
	// Compose is the compose page for this hour ("" for an hour that has passed).
	Compose string
	Past    bool
}

type calDay struct {
	Date    time.Time
	Label   string
	InRange bool
	Today   bool
	Past    bool
	Posts   calPosts
	// Compose is the compose page for this day ("" for a day that has passed).
	Compose string
	// Slots are the day's 24 hours (week view).
	Slots []calSlot
}

// calWeek is a row of the month view.
type calWeek []calDay

// Folded reports a week that a phone shows no day of (each is past and empty, or empty and
// outside the month): the row folds away with its days, so that no table row is left without
// cells.
func (w calWeek) Folded() bool {
	for _, d := range w {
		empty := len(d.Posts.Shown) == 0
		if !(empty && (!d.InRange || (d.Past && !d.Today))) {
			return false
		}
	}
	return true
}

type calendarData struct {
	View        string // week or month
	Title       string
	Weeks       []calWeek
	Prev, Next  string
	Today       string
	WeekdayHead []string
	// Hours label the week view's rows.
	Hours []string
	// CanMove says whether the person may move posts (and compose for a day).
	CanMove bool
}

// calendar is GET /calendar?view=week|month&date=YYYY-MM-DD: scheduled posts at their time
// (and those waiting for approval at the time asked), published, partial and failed ones at
// their first publication (else their last change), by week with its hours (Monday first) or by
// month, in the user's zone. A scheduled post is moved to another day or hour by dragging it or
// with the keyboard (static/app.js), which calls the same schedule operation as
// POST /v1/posts/:id/schedule; an empty day or hour opens Compose for it.
func (p *pages) calendar(c *echo.Context) error {
	v := p.newView(c, "Calendar", "calendar", nil)
	zone := v.Zone
	now := v.Now.In(zone)
	d := calendarData{View: c.QueryParam("view"), CanMove: server.Principal(c).HasRole(auth.RoleEditor)}
	if d.View != "week" {
		d.View = "month"
	}
	anchor := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, zone)
	if t, err := time.ParseInLocation("2006-01-02", c.QueryParam("date"), zone); err == nil && t.Year() > 1 && t.Year() < 10000 {
		anchor = t
	}
	var from, to, rangeFrom, rangeTo time.Time
	if d.View == "week" {
		from = mondayOf(anchor)
		to = from.AddDate(0, 0, 7)
		rangeFrom, rangeTo = from, to
		d.Title = "Week of " + from.Format("2 January 2006")
		d.Prev, d.Next = calLink("week", from.AddDate(0, 0, -7)), calLink("week", from.AddDate(0, 0, 7))
		for h := 0; h < 24; h++ {
			d.Hours = append(d.Hours, hourLabel(h))
		}
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
		list, err := tx.CalendarPosts(v.Scope, from, to, calendarScan)
		if err != nil {
			return err
		}
		for _, po := range list {
			at := postTime(po)
			if at.IsZero() || at.Before(from) || !at.Before(to) {
				continue
			}
			posts = append(posts, calPost{ID: po.ID, Status: po.Status, Text: excerpt(po.Content, 60), At: at,
				Clock: at.In(zone).Format("15:04"), Networks: postNetworks(po),
				Movable: d.CanMove && po.Status == persistence.PostScheduled})
		}
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	sort.SliceStable(posts, func(i, j int) bool { return posts[i].At.Before(posts[j].At) })
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, zone)
	for day := from; day.Before(to); day = day.AddDate(0, 0, 1) {
		if len(d.Weeks) == 0 || len(d.Weeks[len(d.Weeks)-1]) == 7 {
			d.Weeks = append(d.Weeks, nil)
		}
		end := day.AddDate(0, 0, 1)
		cd := calDay{Date: day, Label: day.Format("Mon 2 Jan"), InRange: !day.Before(rangeFrom) && day.Before(rangeTo),
			Today: day.Equal(today), Past: day.Before(today)}
		var in []calPost
		for _, cp := range posts {
			if !cp.At.Before(day) && cp.At.Before(end) {
				in = append(in, cp)
			}
		}
		if d.View == "week" {
			for h := 0; h < 24; h++ {
				start := time.Date(day.Year(), day.Month(), day.Day(), h, 0, 0, 0, zone)
				var hour []calPost
				for _, cp := range in {
					if cp.At.In(zone).Hour() == h {
						hour = append(hour, cp)
					}
				}
				s := calSlot{Hour: h, Label: hourLabel(h), Posts: splitPosts(hour, hourShown), Past: !start.Add(time.Hour).After(now)}
				if d.CanMove && !s.Past {
					s.Compose = composeLink(start)
				}
				cd.Slots = append(cd.Slots, s)
			}
		} else {
			cd.Posts = splitPosts(in, monthShown)
		}
		if d.CanMove && !cd.Past {
			// A day's own compose time: the next full hour today, 09:00 on a later day.
			at := time.Date(day.Year(), day.Month(), day.Day(), 9, 0, 0, 0, zone)
			if cd.Today {
				at = now.Truncate(time.Hour).Add(time.Hour)
			}
			cd.Compose = composeLink(at)
		}
		d.Weeks[len(d.Weeks)-1] = append(d.Weeks[len(d.Weeks)-1], cd)
	}
	v.Data = d
	return p.render(c, 200, "calendar", v)
}

// postTime is where a post sits in the calendar: its schedule (asked, for a post waiting for
// approval), else its first publication, else its last change.
func postTime(po *persistence.Post) time.Time {
	if (po.Status == persistence.PostScheduled || po.Status == persistence.PostPendingApproval) && po.ScheduledAt != nil {
		return *po.ScheduledAt
	}
	if po.Status == persistence.PostPendingApproval {
		return time.Time{} // to be published once approved: no time yet
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

// postNetworks are a post's networks, once each.
func postNetworks(po *persistence.Post) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range po.Targets {
		if !seen[t.Platform] {
			seen[t.Platform] = true
			out = append(out, t.Platform)
		}
	}
	return out
}

func mondayOf(t time.Time) time.Time {
	off := (int(t.Weekday()) + 6) % 7
	return time.Date(t.Year(), t.Month(), t.Day()-off, 0, 0, 0, 0, t.Location())
}

func calLink(view string, t time.Time) string {
	return "/calendar?view=" + view + "&date=" + t.Format("2006-01-02")
}

// composeLink is Compose with its schedule filled in for t (wall time in the user's zone).
func composeLink(t time.Time) string {
	return "/compose?date=" + t.Format("2006-01-02") + "&time=" + t.Format("15:04")
}

func hourLabel(h int) string {
	if h < 10 {
		return "0" + strconv.Itoa(h) + ":00"
	}
	return strconv.Itoa(h) + ":00"
}
