package youtube

// Moderation: a comment is hidden with comments.setModerationStatus (moderationStatus=rejected,
// 50 quota units) and shown again with moderationStatus=published. YouTube's Data API has no call
// to like a comment, so the adapter is a platforms.Hider and not a platforms.Liker.

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/platforms"
)

var _ platforms.Hider = (*Adapter)(nil)

// HideComment rejects a comment of the video publicationID (comments.setModerationStatus with
// moderationStatus=rejected; YouTube then hides its replies too), or publishes it again. The
// comment is read first (commentThreads.list or comments.list by id): one that is not on the
// video is platforms.ErrNotFound and nothing is sent. Only the video's channel may moderate.
func (a *Adapter) HideComment(ctx context.Context, c platforms.Credentials, publicationID, commentID string, hide bool) error {
	if commentID == "" || strings.ContainsAny(commentID, ",/?#") || publicationID == "" {
		return notFound(0, "YouTube video %s has no comment %s", publicationID, commentID)
	}
	_, videoID, ok, err := a.threadOf(ctx, c, commentID)
	if err != nil {
		return err
	}
	if !ok || videoID != publicationID {
		return notFound(0, "YouTube video %s has no comment %s", publicationID, commentID)
	}
	status := "published"
	if hide {
		status = "rejected"
	}
	q := url.Values{"id": {commentID}, "moderationStatus": {status}}
	r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodPost, Bearer: c.AccessToken, URL: a.api + "/youtube/v3/comments/setModerationStatus?" + q.Encode()})
	if err != nil {
		return err
	}
	if r.Status != http.StatusNoContent && r.Status != http.StatusOK {
		return readError(r, false)
	}
	return nil
}
