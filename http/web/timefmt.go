package web

import (
	"fmt"
	"time"
)

// The dashboard writes every time one way: "Tue 1 Dec 2026, 09:30 UTC+05:30": 24-hour, in the
// person's zone (their Settings zone, else UTC), the zone said as its offset from UTC ("UTC" for
// UTC itself). An offset rather than an abbreviation because Go's zone data has none for most
// zones ("-03") and the browser's are other ones ("GMT+9" for Tokyo, where Go says "JST"): the
// offset is the one label both write alike, so a time the script writes (app.js fmtTime, on the
// same rule) reads as the server's. The pages call it through view.When and view.Scheduled; no
// page or handler formats a time of day on its own.

// whenLayout is the date and time of formatWhen, before the zone.
const whenLayout = "Mon 2 Jan 2006, 15:04"

// formatWhen writes t in loc with the zone's offset: the dashboard's one date format.
func formatWhen(t time.Time, loc *time.Location) string {
	t = t.In(loc)
	return t.Format(whenLayout) + " " + zoneOffset(t)
}

// zoneOffset is "UTC" for a time at offset zero, else "UTC+05:30", "UTC-03:00".
func zoneOffset(t time.Time) string {
	_, off := t.Zone()
	if off == 0 {
		return "UTC"
	}
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("UTC%c%02d:%02d", sign, off/3600, off%3600/60)
}
