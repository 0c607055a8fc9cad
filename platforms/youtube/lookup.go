package youtube

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// maxLookupPages bounds how far back Lookup pages through the channel's videos.
const maxLookupPages = 10

// Lookup looks for a video of the account with this post's title and description published at or
// after since: search.list?forMine=true&type=video&order=date lists the channel's videos newest
// first (with shortened descriptions), and videos.list confirms the full description of the ones
// whose title matches.
func (a *Adapter) Lookup(ctx context.Context, c platforms.Credentials, p platforms.Post, since time.Time) (platforms.Publication, bool, error) {
	title := Title(p.Text)
	since = since.Truncate(time.Second) // YouTube's timestamps have whole seconds
	token := ""
	for page := 0; page < maxLookupPages; page++ {
		q := url.Values{"part": {"snippet"}, "forMine": {"true"}, "type": {"video"}, "order": {"date"}, "maxResults": {"50"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodGet, Bearer: c.AccessToken, URL: a.api + "/youtube/v3/search?" + q.Encode()})
		if err != nil {
			return platforms.Publication{}, false, err
		}
		if r.Status != http.StatusOK {
			return platforms.Publication{}, false, classify(r, false)
		}
		var list struct {
			NextPageToken string `json:"nextPageToken"`
			Items         []struct {
				ID struct {
					VideoID string `json:"videoId"`
				} `json:"id"`
				Snippet struct {
					PublishedAt time.Time `json:"publishedAt"`
					Title       string    `json:"title"`
				} `json:"snippet"`
			} `json:"items"`
		}
		if err := json.Unmarshal(r.Body, &list); err != nil {
			return platforms.Publication{}, false, invalidBody(r.Status, "not a search result list", false)
		}
		var candidates []string
		older := false
		for _, it := range list.Items {
			if it.Snippet.PublishedAt.Before(since) {
				older = true
				continue
			}
			if strings.TrimSpace(it.Snippet.Title) == title && it.ID.VideoID != "" {
				candidates = append(candidates, it.ID.VideoID)
			}
		}
		if len(candidates) > 0 {
			id, err := a.matchDescription(ctx, c, candidates, p.Text)
			if err != nil {
				return platforms.Publication{}, false, err
			}
			if id != "" {
				return platforms.Publication{ID: id, URL: "https://www.youtube.com/watch?v=" + url.QueryEscape(id)}, true, nil
			}
		}
		if older || list.NextPageToken == "" {
			return platforms.Publication{}, false, nil
		}
		token = list.NextPageToken
	}
	return platforms.Publication{}, false, platforms.LookupIncomplete(platforms.YouTube, maxLookupPages)
}

// matchDescription returns the first of ids whose full description is text.
func (a *Adapter) matchDescription(ctx context.Context, c platforms.Credentials, ids []string, text string) (string, error) {
	r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodGet, Bearer: c.AccessToken,
		URL: a.api + "/youtube/v3/videos?part=snippet&id=" + url.QueryEscape(strings.Join(ids, ","))})
	if err != nil {
		return "", err
	}
	if r.Status != http.StatusOK {
		return "", classify(r, false)
	}
	var list struct {
		Items []struct {
			ID      string `json:"id"`
			Snippet struct {
				Description string `json:"description"`
			} `json:"snippet"`
		} `json:"items"`
	}
	if err := json.Unmarshal(r.Body, &list); err != nil {
		return "", invalidBody(r.Status, "not a video list", false)
	}
	want := normalize(text)
	for _, id := range ids { // keep search's order: newest first
		for _, it := range list.Items {
			if it.ID == id && normalize(it.Snippet.Description) == want {
				return id, nil
			}
		}
	}
	return "", nil
}

// normalize evens out line endings and surrounding space, which YouTube may change.
func normalize(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
}
