package youtube

// First comments (networks.md §7.5): the channel comments on its video with commentThreads.insert
// (a top-level comment, 50 quota units) and finds the comment again with commentThreads.list
// (1 unit a page). A comment's link is the video's with its id (lc=).

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
)

var _ platforms.FirstCommenter = (*Adapter)(nil)

// lookupThreadPages bounds how many pages of 100 threads LookupComment reads.
const lookupThreadPages = 3

func checkComment(on platforms.Publication, text string) error {
	switch n := utf8.RuneCountInString(text); {
	case strings.TrimSpace(text) == "":
		return invalid("a comment needs text")
	case n > platforms.CommentMax(platforms.YouTube):
		return invalid("the comment is %d characters; YouTube allows %d", n, platforms.CommentMax(platforms.YouTube))
	case on.ID == "" || strings.ContainsAny(on.ID, ",/?#"):
		return notFound(0, "%q is not a YouTube video id", on.ID)
	}
	return nil
}

func commentURL(videoID, commentID string) string {
	return "https://www.youtube.com/watch?v=" + url.QueryEscape(videoID) + "&lc=" + url.QueryEscape(commentID)
}

// PublishComment comments text on the channel's video as a top-level comment
// (commentThreads.insert, 50 units). A 5xx or a lost answer is Unknown (LookupComment resolves
// it); a video YouTube does not find is platforms.ErrNotFound; a video whose comments are turned
// off is Permanent (commentsDisabled).
func (a *Adapter) PublishComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string) (platforms.Result, error) {
	if err := checkComment(on, text); err != nil {
		return platforms.Result{}, err
	}
	raw, _ := json.Marshal(map[string]any{"snippet": map[string]any{"videoId": on.ID, "topLevelComment": map[string]any{"snippet": map[string]string{"textOriginal": text}}}})
	r, err := platforms.Send(ctx, a.hc, platforms.YouTube, platforms.Call{Method: http.MethodPost, Bearer: c.AccessToken, URL: a.api + "/youtube/v3/commentThreads?part=snippet",
		Body: raw, ContentType: "application/json", Create: true})
	if err != nil {
		return platforms.Result{}, err
	}
	if r.Status != http.StatusOK && r.Status != http.StatusCreated {
		e := readError(r, true)
		if strings.HasPrefix(e.Message, "YouTube answered") {
			e.Message = "YouTube answered " + http.StatusText(r.Status) + " to the comment; it may exist"
		}
		return platforms.Result{}, e
	}
	var out ytThread
	if err := json.Unmarshal(r.Body, &out); err != nil || (out.ID == "" && out.Snippet.TopLevelComment.ID == "") {
		return platforms.Result{}, &platforms.Error{Platform: platforms.YouTube, Kind: platforms.Unknown, Status: r.Status,
			Message: "YouTube's answer to the comment is not a comment thread; the comment may exist"}
	}
	id := out.Snippet.TopLevelComment.ID
	if id == "" {
		id = out.ID
	}
	return platforms.Result{Publication: platforms.Publication{ID: id, URL: commentURL(on.ID, id)}}, nil
}

// LookupComment reads the video's comment threads, newest first (commentThreads.list, up to 3
// pages of 100), for the channel's top-level comment with exactly this text, published at or
// after since.
func (a *Adapter) LookupComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string, since time.Time) (platforms.Publication, bool, error) {
	if err := checkComment(on, text); err != nil {
		return platforms.Publication{}, false, err
	}
	q := url.Values{"part": {"snippet"}, "videoId": {on.ID}, "maxResults": {"100"}, "order": {"time"}, "textFormat": {"plainText"}}
	floor := since.Truncate(time.Second)
	for page := 0; page < lookupThreadPages; page++ {
		var list struct {
			NextPageToken string      `json:"nextPageToken"`
			Items         *[]ytThread `json:"items"`
		}
		r, err := a.get(ctx, c, "/youtube/v3/commentThreads", q, &list)
		if err != nil {
			return platforms.Publication{}, false, err
		}
		if list.Items == nil {
			return platforms.Publication{}, false, invalidBody(r.Status, "no items in the comment thread list", false)
		}
		older := false
		for _, th := range *list.Items {
			top := th.Snippet.TopLevelComment
			if top.Snippet.PublishedAt.Before(floor) {
				older = true
				continue
			}
			if top.Snippet.AuthorChannelID.Value == c.UserID && c.UserID != "" && top.Snippet.TextOriginal == text {
				id := top.ID
				if id == "" {
					id = th.ID
				}
				return platforms.Publication{ID: id, URL: commentURL(on.ID, id)}, true, nil
			}
		}
		if older || list.NextPageToken == "" {
			break
		}
		q.Set("pageToken", list.NextPageToken)
	}
	return platforms.Publication{}, false, nil
}
