package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v5"

	"github.com/heraldhq/herald/http/apierr"
	"github.com/heraldhq/herald/http/live"
	"github.com/heraldhq/herald/http/server"
)

// analyticsRanges are the windows the analytics page offers (live.Ranges but custom).
var analyticsRanges = func() []string {
	var out []string
	for _, r := range live.Ranges {
		if r != "custom" {
			out = append(out, r)
		}
	}
	return out
}()

// chartW and chartH are the analytics charts' drawing size (the SVG's viewBox; it scales to
// its box).
const (
	chartW = 720
	chartH = 180
	// chartTop leaves room for the largest bar's label.
	chartTop = 12
)

// chartBar is one day's bar of a chart, in the viewBox's units.
type chartBar struct {
	X, Y, W, H string
	// Label is the day and its value, the bar's <title> (a tooltip and its accessible name).
	Label string
}

// chart is one series of the overview drawn as bars, one per day, with the day's value in a
// table beside it for those who do not read charts.
type chart struct {
	ID, Title string
	Max       int64
	Bars      []chartBar
	// First and Last are the first and last days, under the axis.
	First, Last string
}

// newChart draws values (one per day of series) as bars scaled to the largest.
func newChart(id, title string, series []live.Day, value func(live.Day) int64) chart {
	c := chart{ID: id, Title: title}
	for _, d := range series {
		c.Max = max(c.Max, value(d))
	}
	if len(series) == 0 {
		return c
	}
	c.First, c.Last = series[0].Date, series[len(series)-1].Date
	step := float64(chartW) / float64(len(series))
	gap := step * 0.2
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
	for i, d := range series {
		v := value(d)
		h := 0.0
		if c.Max > 0 {
			h = float64(v) / float64(c.Max) * float64(chartH-chartTop)
		}
		// A day with nothing still shows a line on the axis, so that the days are countable.
		h = max(h, 1)
		c.Bars = append(c.Bars, chartBar{X: f(float64(i)*step + gap/2), Y: f(float64(chartH) - h), W: f(step - gap), H: f(h),
			Label: fmt.Sprintf("%s: %d", d.Date, v)})
	}
	return c
}

type analyticsData struct {
	Ranges   []string
	Range    string
	Overview live.Overview
	Charts   []chart
	// Names are the names of the workspace's accounts, by id (top posts and reconnects).
	Names map[string]string
}

// analytics is GET /analytics?range=: the overview of GET /v1/analytics/overview (the same
// live.Service call, its cache and budgets), drawn as charts and tables.
func (p *pages) analytics(c *echo.Context) error {
	v := p.newView(c, "Analytics", "analytics", nil)
	if p.Live == nil {
		return p.fail(c, http.StatusNotFound, "Analytics are not available on this server.")
	}
	d := analyticsData{Ranges: analyticsRanges, Range: c.QueryParam("range"), Names: map[string]string{}}
	if !slices.Contains(analyticsRanges, d.Range) {
		d.Range = "28d"
	}
	w, err := live.ParseWindow(d.Range, "", "", p.Now())
	if err != nil {
		return p.liveFail(c, err)
	}
	body, err := p.Live.Overview(c.Request().Context(), v.Scope, live.OverviewQuery{Window: w, Fresh: c.QueryParam("fresh") == "true"})
	if err != nil {
		return p.liveFail(c, err)
	}
	if err := json.Unmarshal(body, &d.Overview); err != nil {
		return p.liveFail(c, err)
	}
	ov := d.Overview
	d.Charts = []chart{
		newChart("chart-engagement", "Engagement per day (likes, comments and shares)", ov.Series, func(d live.Day) int64 { return d.Engagement }),
		newChart("chart-views", "Views per day", ov.Series, func(d live.Day) int64 { return d.Views }),
		newChart("chart-publications", "Publications per day", ov.Series, func(d live.Day) int64 { return int64(d.Publications) }),
	}
	if d.Names, err = p.accountNames(v.Scope); err != nil {
		return p.storeError(c, err)
	}
	v.Data = d
	return p.render(c, http.StatusOK, "analytics", v)
}

// liveFail renders the error page for a failed live read: the API's own message for a refusal,
// a plain sentence otherwise (logged).
func (p *pages) liveFail(c *echo.Context, err error) error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return p.fail(c, ae.Status, ae.Message)
	}
	p.Log.Error("web: live read failed", append(server.LogAttrs(c), "error", err)...)
	return p.fail(c, http.StatusServiceUnavailable, "Herald could not read the networks just now. Try again shortly.")
}
