package tiktok

// Live data (networks.md §9.5): a video's counts from the Display API's video query.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/heraldhq/herald/platforms"
)

var _ platforms.Reader = (*Adapter)(nil)

// maxQueryIDs is how many video ids one /v2/video/query/ takes.
const maxQueryIDs = 20

// BatchMetrics reads the counts of several of the creator's videos, 20 per call of POST
// /v2/video/query/ (scope video.list, the Display API's 600 calls a minute). Videos TikTok does not
// return (not the creator's, not published yet, or a publish_id rather than a post id) are left out
// of the map.
func (a *Adapter) BatchMetrics(ctx context.Context, c platforms.Credentials, ids []string) (map[string]platforms.Metrics, error) {
	out := make(map[string]platforms.Metrics, len(ids))
	var valid []string
	for _, id := range ids {
		if id != "" {
			valid = append(valid, id)
		}
	}
	for start := 0; start < len(valid); start += maxQueryIDs {
		body, _ := json.Marshal(map[string]any{"filters": map[string]any{"video_ids": valid[start:min(start+maxQueryIDs, len(valid))]}})
		var res struct {
			Videos *[]struct {
				ID           string `json:"id"`
				ViewCount    *int64 `json:"view_count"`
				LikeCount    *int64 `json:"like_count"`
				CommentCount *int64 `json:"comment_count"`
				ShareCount   *int64 `json:"share_count"`
			} `json:"videos"`
		}
		err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.api + "/v2/video/query/?fields=id,view_count,like_count,comment_count,share_count",
			Body: body, Bearer: c.AccessToken, ContentType: "application/json; charset=UTF-8"}, &res)
		if err != nil {
			return nil, err
		}
		if res.Videos == nil {
			return nil, invalidBody(http.StatusOK, "no videos in the answer", false)
		}
		for _, v := range *res.Videos {
			out[v.ID] = platforms.Metrics{Views: v.ViewCount, Likes: v.LikeCount, Comments: v.CommentCount, Shares: v.ShareCount}
		}
	}
	return out, nil
}

// Metrics reads a video's view_count, like_count, comment_count and share_count. A video TikTok
// does not return for the creator (another creator's, or still in moderation so that Herald only
// knows its publish_id) is platforms.ErrNotFound.
func (a *Adapter) Metrics(ctx context.Context, c platforms.Credentials, publicationID string) (platforms.Metrics, error) {
	return platforms.MetricsOf(ctx, c, publicationID, a.BatchMetrics, func() error {
		return &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Permanent, Code: "not_found",
			Message: fmt.Sprintf("TikTok returns no video %s for this creator", publicationID), Err: platforms.ErrNotFound}
	})
}
