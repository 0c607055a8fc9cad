package web

import (
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/server"
)

// settings is GET /settings: the user's name, time zone and password, and the workspace's
// posting queue (docs/queue.md). The time zone selects list the browser's IANA zones
// (Intl.supportedValuesOf), the current one first.
func (p *pages) settings(c *echo.Context) error {
	v := p.newView(c, "Settings", "settings", nil)
	v.Data = settingsData{Queue: queueForm(v, server.Principal(c).User.Timezone)}
	return p.render(c, 200, "settings", v)
}

// settingsData is what the Settings page shows besides the profile.
type settingsData struct {
	Queue *queueData
}

// queueData is the queue form: the workspace's zone and slots (the user's zone and none while
// the queue was never set). Nil when the workspace could not be read: the section is left out.
type queueData struct {
	Timezone string
	Slots    []queueSlot
	// Blank is the row "Add a slot" adds.
	Blank queueSlot
}

// queueSlot is one row of the form: its day among the week's, and its time.
type queueSlot struct {
	Days []dayOption
	Time string
}

type dayOption struct {
	Value, Label string
	Selected     bool
}

var queueDays = []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

func slotRow(weekday, at string) queueSlot {
	row := queueSlot{Time: at}
	for _, d := range queueDays {
		row.Days = append(row.Days, dayOption{Value: d, Label: strings.ToUpper(d[:1]) + d[1:], Selected: d == weekday})
	}
	return row
}

func queueForm(v view, userZone string) *queueData {
	if v.Workspace == nil {
		return nil
	}
	d := &queueData{Timezone: userZone, Blank: slotRow("monday", "09:00")}
	if d.Timezone == "" {
		d.Timezone = "UTC"
	}
	if q := v.Workspace.Queue; q != nil {
		d.Timezone = q.Timezone
		for _, s := range q.Slots {
			d.Slots = append(d.Slots, slotRow(s.Weekday, s.Time))
		}
	}
	return d
}
