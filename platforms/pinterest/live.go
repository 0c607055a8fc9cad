package pinterest

// Live data (networks.md §8.5): a Pin's analytics.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

var _ platforms.Reader = (*Adapter)(nil)

// analyticsDays is how far back Pin analytics reach (Pinterest keeps 90 days).
const analyticsDays = 90

// metricTypes are the Pin metrics Herald reads, and which counter each one is.
var metricTypes = []string{"IMPRESSION", "TOTAL_REACTIONS", "TOTAL_COMMENTS", "SAVE"}

// Metrics reads a Pin's analytics (GET /v5/pins/{pin_id}/analytics over the last 90 days, all
// apps): views are IMPRESSION, likes TOTAL_REACTIONS, comments TOTAL_COMMENTS and shares SAVE
// (a save re-pins the Pin to a board, Pinterest's way of sharing). The Pin's lifetime_metrics are
// used when Pinterest sends them, else the summary of the 90 days; a metric Pinterest leaves out
// is nil. A Pin that does not exist, or that is not the account's (403 code 29), is
// platforms.ErrNotFound.
func (a *Adapter) Metrics(ctx context.Context, c platforms.Credentials, publicationID string) (platforms.Metrics, error) {
	if publicationID == "" || strings.ContainsAny(publicationID, "/?#") {
		return platforms.Metrics{}, notFound(0, "%q is not a Pin id", publicationID)
	}
	today := time.Now().UTC()
	q := url.Values{
		"start_date":   {today.AddDate(0, 0, -(analyticsDays - 1)).Format("2006-01-02")},
		"end_date":     {today.Format("2006-01-02")},
		"metric_types": {strings.Join(metricTypes, ",")},
		"app_types":    {"ALL"},
		"split_field":  {"NO_SPLIT"},
	}
	r, err := platforms.Send(ctx, a.hc, platforms.Pinterest, platforms.Call{Method: http.MethodGet, URL: a.api + "/v5/pins/" + url.PathEscape(publicationID) + "/analytics?" + q.Encode(), Bearer: c.AccessToken})
	if err != nil {
		return platforms.Metrics{}, err
	}
	if r.Status != http.StatusOK {
		e := classify(r, false)
		if r.Status == http.StatusNotFound || (r.Status == http.StatusForbidden && e.Code == "29") {
			e.Err = platforms.ErrNotFound
		}
		return platforms.Metrics{}, e
	}
	var byApp map[string]struct {
		Lifetime map[string]json.Number `json:"lifetime_metrics"`
		Summary  map[string]json.Number `json:"summary_metrics"`
	}
	if err := json.Unmarshal(r.Body, &byApp); err != nil {
		return platforms.Metrics{}, invalidBody(r.Status, "not Pin analytics", false)
	}
	all, ok := byApp["all"]
	if !ok {
		all, ok = byApp["ALL"]
	}
	if !ok {
		return platforms.Metrics{}, invalidBody(r.Status, "no \"all\" analytics", false)
	}
	values := all.Lifetime
	if len(values) == 0 {
		values = all.Summary
	}
	return platforms.Metrics{
		Views: metric(values, "IMPRESSION"), Likes: metric(values, "TOTAL_REACTIONS"),
		Comments: metric(values, "TOTAL_COMMENTS"), Shares: metric(values, "SAVE"),
	}, nil
}

// metric reads one counter; Pinterest sends numbers that may carry a fraction.
func metric(values map[string]json.Number, name string) *int64 {
	v, ok := values[name]
	if !ok {
		return nil
	}
	if n, err := v.Int64(); err == nil {
		return &n
	}
	f, err := v.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	n := int64(math.Round(f))
	return &n
}

// notFound is the error of an object the account cannot see; it wraps platforms.ErrNotFound.
func notFound(status int, format string, args ...any) *platforms.Error {
	return &platforms.Error{Platform: platforms.Pinterest, Kind: platforms.Permanent, Status: status, Code: "50",
		Message: fmt.Sprintf(format, args...), Err: platforms.ErrNotFound}
}

// BatchMetrics reads the analytics of several Pins, one call each (Pinterest has no batch read
// of Pin analytics). Pins that are not found are left out of the map.
func (a *Adapter) BatchMetrics(ctx context.Context, c platforms.Credentials, ids []string) (map[string]platforms.Metrics, error) {
	out := make(map[string]platforms.Metrics, len(ids))
	for _, id := range ids {
		m, err := a.Metrics(ctx, c, id)
		if errors.Is(err, platforms.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = m
	}
	return out, nil
}
