package youtube

// Live data (networks.md §7.5): a video's statistics from videos.list, its comments from
// commentThreads.list and comments.list, and replies with comments.insert. Quota costs: 1 unit
// per list call, 50 per comments.insert (in the unit pool model).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

var (
	_ platforms.Reader    = (*Adapter)(nil)
	_ platforms.Commenter = (*Adapter)(nil)
)

// Read limits.
const (
	maxListIDs      = 50    // videos.list takes up to 50 ids
	threadPages     = 5     // commentThreads pages of 100 read by Comments
	replyPages      = 5     // comments.list pages of 100 read per thread
	MaxCommentChars = 10000 // a comment's text
)

// notFound is the error of an object the account cannot see; it wraps platforms.ErrNotFound.
func notFound(status int, format string, args ...any) *platforms.Error {
	return &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Permanent, Status: status, Code: "notFound",
		Message: fmt.Sprintf(format, args...), Err: platforms.ErrNotFound}
}

// readError classifies a failed live call; a 404 (videoNotFound, parentCommentNotFound,
// commentNotFound) wraps platforms.ErrNotFound.
func readError(r *platforms.Answer, create bool) *platforms.Error {
	e := classify(r, create)
	if r.Status == http.StatusNotFound {
		e.Err = platforms.ErrNotFound
	}
	return e
}

// get makes a list call and decodes the answer into out.
func (a *Adapter) get(ctx context.Context, c platforms.Credentials, path string, q url.Values, out any) (*platforms.Answer, error) {
	r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodGet, Bearer: c.AccessToken, URL: a.api + path + "?" + q.Encode()})
	if err != nil {
		return nil, err
	}
	if r.Status != http.StatusOK {
		return nil, readError(r, false)
	}
	if err := json.Unmarshal(r.Body, out); err != nil {
		return nil, invalidBody(r.Status, "not a list response", false)
	}
	return r, nil
}

// count parses one of YouTube's counters (decimal strings); nil when absent (a hidden like count).
func count(v *string) *int64 {
	if v == nil {
		return nil
	}
	n, err := strconv.ParseInt(*v, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

// BatchMetrics reads the statistics of several videos, 50 per call of videos.list. Videos YouTube
// does not return (deleted, or private to another channel) are left out of the map.
func (a *Adapter) BatchMetrics(ctx context.Context, c platforms.Credentials, ids []string) (map[string]platforms.Metrics, error) {
	out := make(map[string]platforms.Metrics, len(ids))
	var valid []string
	for _, id := range ids {
		if id != "" && !strings.ContainsAny(id, ",/?#") {
			valid = append(valid, id)
		}
	}
	for start := 0; start < len(valid); start += maxListIDs {
		var list struct {
			Items *[]struct {
				ID         string `json:"id"`
				Statistics struct {
					ViewCount    *string `json:"viewCount"`
					LikeCount    *string `json:"likeCount"`
					CommentCount *string `json:"commentCount"`
				} `json:"statistics"`
			} `json:"items"`
		}
		q := url.Values{"part": {"statistics"}, "id": {strings.Join(valid[start:min(start+maxListIDs, len(valid))], ",")}}
		r, err := a.get(ctx, c, "/youtube/v3/videos", q, &list)
		if err != nil {
			return nil, err
		}
		if list.Items == nil {
			return nil, invalidBody(r.Status, "no items in the video list", false)
		}
		for _, it := range *list.Items {
			st := it.Statistics
			out[it.ID] = platforms.Metrics{Views: count(st.ViewCount), Likes: count(st.LikeCount), Comments: count(st.CommentCount)}
		}
	}
	return out, nil
}

// Metrics reads a video's statistics with videos.list?part=statistics: viewCount, likeCount
// (nil when the channel hides it) and commentCount. YouTube reports no shares through the Data
// API, so Shares is nil. A video YouTube does not return is platforms.ErrNotFound.
func (a *Adapter) Metrics(ctx context.Context, c platforms.Credentials, publicationID string) (platforms.Metrics, error) {
	return platforms.MetricsOf(ctx, c, publicationID, a.BatchMetrics, func() error {
		return notFound(0, "YouTube has no video %s", publicationID)
	})
}

// ytComment is YouTube's comment resource.
type ytComment struct {
	ID      string `json:"id"`
	Snippet struct {
		VideoID           string `json:"videoId"`
		TextDisplay       string `json:"textDisplay"`
		TextOriginal      string `json:"textOriginal"`
		ParentID          string `json:"parentId"`
		AuthorDisplayName string `json:"authorDisplayName"`
		AuthorChannelID   struct {
			Value string `json:"value"`
		} `json:"authorChannelId"`
		PublishedAt time.Time `json:"publishedAt"`
	} `json:"snippet"`
}

func (y ytComment) comment(c platforms.Credentials, videoID string) platforms.Comment {
	text := y.Snippet.TextOriginal
	if text == "" {
		text = y.Snippet.TextDisplay
	}
	author := y.Snippet.AuthorDisplayName
	if author == "" {
		author = y.Snippet.AuthorChannelID.Value
	}
	return platforms.Comment{ID: y.ID, PublicationID: videoID, ParentID: y.Snippet.ParentID, Author: author, Text: text,
		CreatedAt: y.Snippet.PublishedAt.UTC(), ByAccount: c.UserID != "" && y.Snippet.AuthorChannelID.Value == c.UserID}
}

// ytThread is YouTube's commentThread resource.
type ytThread struct {
	ID      string `json:"id"`
	Snippet struct {
		VideoID         string    `json:"videoId"`
		TopLevelComment ytComment `json:"topLevelComment"`
		TotalReplyCount int       `json:"totalReplyCount"`
	} `json:"snippet"`
	Replies struct {
		Comments []ytComment `json:"comments"`
	} `json:"replies"`
}

// Comments lists a video's comments and their replies, newest first: commentThreads.list
// (part=snippet,replies, 100 threads a page) and, for threads with more replies than the few it
// inlines, comments.list?parentId=. A reply's ParentID is its top-level comment (YouTube threads
// are one level deep). A video with comments disabled has none; a video YouTube does not find is
// platforms.ErrNotFound.
func (a *Adapter) Comments(ctx context.Context, c platforms.Credentials, publicationID string) ([]platforms.Comment, error) {
	if publicationID == "" || strings.ContainsAny(publicationID, ",/?#") {
		return nil, notFound(0, "%q is not a YouTube video id", publicationID)
	}
	q := url.Values{"part": {"snippet,replies"}, "videoId": {publicationID}, "maxResults": {"100"}, "order": {"time"}, "textFormat": {"plainText"}}
	out := []platforms.Comment{}
	for page := 0; page < threadPages; page++ {
		var list struct {
			NextPageToken string      `json:"nextPageToken"`
			Items         *[]ytThread `json:"items"`
		}
		r, err := a.get(ctx, c, "/youtube/v3/commentThreads", q, &list)
		if err != nil {
			var e *platforms.Error
			if errors.As(err, &e) && e.Code == "commentsDisabled" {
				return out, nil
			}
			return nil, err
		}
		if list.Items == nil {
			return nil, invalidBody(r.Status, "no items in the comment thread list", false)
		}
		for _, th := range *list.Items {
			out = append(out, th.Snippet.TopLevelComment.comment(c, publicationID))
			replies := th.Replies.Comments
			if th.Snippet.TotalReplyCount > len(replies) {
				if replies, err = a.replies(ctx, c, th.ID); err != nil {
					return nil, err
				}
			}
			for _, rc := range replies {
				cm := rc.comment(c, publicationID)
				if cm.ParentID == "" {
					cm.ParentID = th.ID
				}
				out = append(out, cm)
			}
		}
		if list.NextPageToken == "" {
			break
		}
		q.Set("pageToken", list.NextPageToken)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// replies reads all replies of a top-level comment with comments.list?parentId=.
func (a *Adapter) replies(ctx context.Context, c platforms.Credentials, parentID string) ([]ytComment, error) {
	q := url.Values{"part": {"snippet"}, "parentId": {parentID}, "maxResults": {"100"}, "textFormat": {"plainText"}}
	var out []ytComment
	for page := 0; page < replyPages; page++ {
		var list struct {
			NextPageToken string       `json:"nextPageToken"`
			Items         *[]ytComment `json:"items"`
		}
		r, err := a.get(ctx, c, "/youtube/v3/comments", q, &list)
		if err != nil {
			return nil, err
		}
		if list.Items == nil {
			return nil, invalidBody(r.Status, "no items in the comment list", false)
		}
		out = append(out, *list.Items...)
		if list.NextPageToken == "" {
			break
		}
		q.Set("pageToken", list.NextPageToken)
	}
	return out, nil
}

// threadOf returns the top-level comment id of a comment and the video of its thread: the
// comment itself when it is a thread (commentThreads.list?id=), else its parent's thread
// (comments.list?id= for the parentId). ok is false when YouTube does not find it.
func (a *Adapter) threadOf(ctx context.Context, c platforms.Credentials, commentID string) (topID, videoID string, ok bool, err error) {
	thread := func(id string) (string, bool, error) {
		var list struct {
			Items *[]ytThread `json:"items"`
		}
		r, err := a.get(ctx, c, "/youtube/v3/commentThreads", url.Values{"part": {"snippet"}, "id": {id}}, &list)
		if err != nil {
			return "", false, err
		}
		if list.Items == nil {
			return "", false, invalidBody(r.Status, "no items in the comment thread list", false)
		}
		for _, th := range *list.Items {
			if th.ID == id {
				return th.Snippet.VideoID, true, nil
			}
		}
		return "", false, nil
	}
	if video, found, err := thread(commentID); err != nil || found {
		return commentID, video, found, err
	}
	var list struct {
		Items *[]ytComment `json:"items"`
	}
	r, err := a.get(ctx, c, "/youtube/v3/comments", url.Values{"part": {"snippet"}, "id": {commentID}}, &list)
	if err != nil {
		return "", "", false, err
	}
	if list.Items == nil {
		return "", "", false, invalidBody(r.Status, "no items in the comment list", false)
	}
	for _, it := range *list.Items {
		if it.ID == commentID && it.Snippet.ParentID != "" {
			video, found, err := thread(it.Snippet.ParentID)
			return it.Snippet.ParentID, video, found, err
		}
	}
	return "", "", false, nil
}

// Reply answers a comment with comments.insert (snippet.parentId, 50 quota units). YouTube threads
// are one level deep, so a reply to a reply answers its top-level comment. YouTube takes no media
// on comments: media is Invalid. The comment is first read: one that is not on publicationID is
// platforms.ErrNotFound and nothing is posted.
func (a *Adapter) Reply(ctx context.Context, c platforms.Credentials, publicationID, commentID, text string, media []platforms.Media) (platforms.Comment, error) {
	switch {
	case len(media) > 0:
		return platforms.Comment{}, invalid("YouTube comments take no media; remove the attachment")
	case strings.TrimSpace(text) == "":
		return platforms.Comment{}, invalid("a reply needs text")
	case utf8.RuneCountInString(text) > MaxCommentChars:
		return platforms.Comment{}, invalid("the reply is %d characters; YouTube allows %d", utf8.RuneCountInString(text), MaxCommentChars)
	case commentID == "" || strings.ContainsAny(commentID, ",/?#") || publicationID == "":
		return platforms.Comment{}, notFound(0, "YouTube video %s has no comment %s", publicationID, commentID)
	}
	topID, videoID, ok, err := a.threadOf(ctx, c, commentID)
	if err != nil {
		return platforms.Comment{}, err
	}
	if !ok || videoID != publicationID {
		return platforms.Comment{}, notFound(0, "YouTube video %s has no comment %s", publicationID, commentID)
	}
	raw, _ := json.Marshal(map[string]any{"snippet": map[string]string{"parentId": topID, "textOriginal": text}})
	r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodPost, Bearer: c.AccessToken, URL: a.api + "/youtube/v3/comments?part=snippet",
		Body: raw, ContentType: "application/json", Create: true})
	if err != nil {
		return platforms.Comment{}, err
	}
	if r.Status != http.StatusOK && r.Status != http.StatusCreated {
		return platforms.Comment{}, replyError(r)
	}
	var out ytComment
	if err := json.Unmarshal(r.Body, &out); err != nil || out.ID == "" {
		return platforms.Comment{}, invalidBody(r.Status, "not a comment resource", true)
	}
	cm := out.comment(c, publicationID)
	cm.ByAccount = true
	if cm.ParentID == "" {
		cm.ParentID = topID
	}
	if cm.Text == "" {
		cm.Text = text
	}
	if cm.CreatedAt.IsZero() {
		cm.CreatedAt = time.Now().UTC()
	}
	return cm, nil
}

// replyError classifies a failed comments.insert: as for the last chunk of an upload, a 5xx
// leaves the outcome unknown; a vanished parent is platforms.ErrNotFound.
func replyError(r *platforms.Answer) *platforms.Error {
	e := readError(r, true)
	if strings.HasPrefix(e.Message, "YouTube answered") {
		e.Message = "YouTube answered " + strconv.Itoa(r.Status) + " to the reply; it may exist"
	}
	return e
}
