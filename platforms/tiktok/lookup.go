package tiktok

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// maxLookupPages bounds how far back Lookup pages through the creator's videos.
const maxLookupPages = 10

// Lookup looks for a video of the creator whose caption is the post's text, created at or after
// since: POST /v2/video/list/ lists the creator's published videos newest first. A post still in
// moderation is not listed yet.
func (a *Adapter) Lookup(ctx context.Context, c platforms.Credentials, p platforms.Post, since time.Time) (platforms.Publication, bool, error) {
	want := normalize(p.Text)
	cursor := int64(0)
	for page := 0; page < maxLookupPages; page++ {
		body, _ := json.Marshal(map[string]any{"max_count": 20, "cursor": cursor})
		var list struct {
			Videos []struct {
				ID               string `json:"id"`
				Title            string `json:"title"`
				VideoDescription string `json:"video_description"`
				CreateTime       int64  `json:"create_time"`
				ShareURL         string `json:"share_url"`
			} `json:"videos"`
			Cursor  int64 `json:"cursor"`
			HasMore bool  `json:"has_more"`
		}
		err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.api + "/v2/video/list/?fields=id,title,video_description,create_time,share_url",
			Body: body, Bearer: c.AccessToken, ContentType: "application/json; charset=UTF-8"}, &list)
		if err != nil {
			return platforms.Publication{}, false, err
		}
		older := false
		for _, v := range list.Videos {
			if v.CreateTime < since.Unix() { // whole seconds: since's second counts as "at"
				older = true
				continue
			}
			caption := v.VideoDescription
			if caption == "" {
				caption = v.Title
			}
			if normalize(caption) == want && v.ID != "" {
				return platforms.Publication{ID: v.ID, URL: v.ShareURL}, true, nil
			}
		}
		if older || !list.HasMore || list.Cursor == cursor {
			return platforms.Publication{}, false, nil
		}
		cursor = list.Cursor
	}
	return platforms.Publication{}, false, platforms.LookupIncomplete(platforms.TikTok, maxLookupPages)
}

// normalize evens out line endings and surrounding space.
func normalize(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
}
