package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// insertThread is commentThreads.insert?part=snippet {"snippet":{"videoId","topLevelComment":
// {"snippet":{"textOriginal"}}}}: a top-level comment on a video (50 units in the unit pool
// model). The channel's comment on its own video is recorded with comment_on and listed with the
// video's threads as the channel's own.
func (y *ytSim) insertThread(w http.ResponseWriter, r *http.Request, u ytUser) {
	if _, ok := ytParts(w, r, "id", "snippet"); !ok {
		return
	}
	var req struct {
		Snippet struct {
			VideoID         string `json:"videoId"`
			TopLevelComment struct {
				Snippet struct {
					TextOriginal string `json:"textOriginal"`
				} `json:"snippet"`
			} `json:"topLevelComment"`
		} `json:"snippet"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		ytError(w, http.StatusBadRequest, "global", "parseError", "Parse Error")
		return
	}
	text := req.Snippet.TopLevelComment.Snippet.TextOriginal
	switch {
	case strings.TrimSpace(text) == "":
		ytError(w, http.StatusBadRequest, "youtube.commentThread", "commentTextRequired", "The comment resource that is being inserted must specify a value for the snippet.textOriginal property.")
		return
	case utf8.RuneCountInString(text) > ytMaxCommentChars:
		ytError(w, http.StatusBadRequest, "youtube.commentThread", "commentTextTooLong", "The comment resource that is being inserted contains too many characters in the snippet.textOriginal property.")
		return
	}
	video, ok := y.video(req.Snippet.VideoID, u)
	if !ok {
		ytError(w, http.StatusNotFound, "youtube.commentThread", "videoNotFound", "The video identified by the videoId parameter could not be found.")
		return
	}
	c := y.n.AddAccountComment(Comment{ID: ytCommentID(), PostID: video.id, Author: u.handle, AuthorID: u.id, Text: text}, nil)
	y.n.PublishComment(c.ID, u.id, text, video.id)
	if y.n.TakeFault(FaultPostThenError) != "" {
		ytError(w, http.StatusServiceUnavailable, "global", "backendError", "Backend Error")
		return
	}
	writeYTJSON(w, http.StatusOK, map[string]any{"kind": "youtube#commentThread", "etag": RandomID(8), "id": c.ID, "snippet": map[string]any{
		"channelId": video.channel, "videoId": video.id, "topLevelComment": y.commentResource(c, false),
		"canReply": true, "totalReplyCount": 0, "isPublic": true,
	}})
}
