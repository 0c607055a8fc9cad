package pinterest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// maxLookupPages bounds how far back Lookup pages through the account's Pins.
const maxLookupPages = 10

// Lookup looks for a Pin of the account whose description is the post's text, created at or after
// since: GET /v5/pins lists the account's Pins newest first.
func (a *Adapter) Lookup(ctx context.Context, c platforms.Credentials, p platforms.Post, since time.Time) (platforms.Publication, bool, error) {
	since = since.Truncate(time.Second) // Pinterest's timestamps have whole seconds
	want := normalize(p.Text)
	bookmark := ""
	for page := 0; page < maxLookupPages; page++ {
		q := url.Values{"page_size": {"100"}}
		if bookmark != "" {
			q.Set("bookmark", bookmark)
		}
		r, err := platforms.Send(ctx, a.hc, platforms.Pinterest, platforms.Call{Method: http.MethodGet, URL: a.api + "/v5/pins?" + q.Encode(), Bearer: c.AccessToken})
		if err != nil {
			return platforms.Publication{}, false, err
		}
		if r.Status != http.StatusOK {
			return platforms.Publication{}, false, classify(r, false)
		}
		var list struct {
			Items []struct {
				ID          string `json:"id"`
				CreatedAt   string `json:"created_at"`
				Description string `json:"description"`
			} `json:"items"`
			Bookmark *string `json:"bookmark"`
		}
		if err := json.Unmarshal(r.Body, &list); err != nil {
			return platforms.Publication{}, false, invalidBody(r.Status, "not a Pin list", false)
		}
		older := false
		for _, it := range list.Items {
			created, ok := parseTime(it.CreatedAt)
			if ok && created.Before(since) {
				older = true
				continue
			}
			if normalize(it.Description) == want && it.ID != "" {
				return platforms.Publication{ID: it.ID, URL: "https://www.pinterest.com/pin/" + url.PathEscape(it.ID) + "/"}, true, nil
			}
		}
		if older || list.Bookmark == nil || *list.Bookmark == "" {
			return platforms.Publication{}, false, nil
		}
		bookmark = *list.Bookmark
	}
	return platforms.Publication{}, false, platforms.LookupIncomplete(platforms.Pinterest, maxLookupPages)
}

// parseTime reads Pinterest's created_at ("2022-03-04T19:22:14", UTC, or with a zone).
func parseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// normalize evens out line endings and surrounding space.
func normalize(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
}
