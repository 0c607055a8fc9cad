package web

import (
	"time"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/registry"
)

type composeAccount struct {
	accountRow
	Limit registry.TextLimit
	// Threads and Comments say whether the network takes a thread and a first comment.
	Threads, Comments bool
}

type composeData struct {
	Accounts []composeAccount
	// Date and Time prefill the schedule fields: the next full hour in the user's zone, or the
	// day and hour the calendar was clicked at (?date=YYYY-MM-DD&time=HH:MM, Later set).
	Date, Time string
	Later      bool
}

// compose is GET /compose: the text (counted live against each chosen network's limit), the
// accounts, media uploads, and publish now (with the job's live progress) or schedule.
func (p *pages) compose(c *echo.Context) error {
	v := p.newView(c, "Compose", "compose", nil)
	var d composeData
	err := p.Store.View(func(tx *persistence.Tx) error {
		list, err := tx.AccountsIn(v.Scope)
		if err != nil {
			return err
		}
		for _, r := range accountRows(list, p.Now(), v.Zone) {
			p := platforms.Platform(r.Platform)
			d.Accounts = append(d.Accounts, composeAccount{accountRow: r, Limit: registry.TextLimits[p], Threads: p.HasThreads(), Comments: platforms.CommentMax(p) > 0})
		}
		return nil
	})
	if err != nil {
		return p.storeError(c, err)
	}
	next := v.Now.In(v.Zone).Truncate(time.Hour).Add(time.Hour)
	d.Date, d.Time = next.Format("2006-01-02"), next.Format("15:04")
	// From the calendar: that wall time in the user's zone; anything else is ignored (the
	// schedule itself is the API's to check).
	if at, err := time.ParseInLocation("2006-01-02 15:04", c.QueryParam("date")+" "+c.QueryParam("time"), v.Zone); err == nil {
		d.Date, d.Time, d.Later = at.Format("2006-01-02"), at.Format("15:04"), true
	}
	v.Data = d
	return p.render(c, 200, "compose", v)
}
