package sim

import (
	"net/http"
	"sort"
	"strings"
	"time"
)

// Replies on Threads: a container created with reply_to_id publishes a reply to that post. A
// reply spends the profile's 1,000 replies per 24 hours instead of its 250 posts, is recorded
// with ReplyTo, and is listed on its parent's /replies edge rather than on the profile's threads.

func thReplyLimit() Limit { return Limit{Count: 1000, Window: 24 * time.Hour} }

// replyable reports whether id is a published Threads post (anyone's; the simulator keeps only
// posts published through it).
func (s *thSim) replyable(id string) bool {
	_, ok := s.n.Store.Get("thmedia:" + id)
	return ok
}

// replyTo is the post a container replies to ("" for a post).
func (s *thSim) replyTo(container string) string {
	if v, ok := s.n.Store.Get("threply:" + container); ok {
		return v.(string)
	}
	return ""
}

// spendPublish takes one post, or one reply, from the profile's 24-hour quota; an exhausted one
// answers code 9 and false.
func (s *thSim) spendPublish(w http.ResponseWriter, user string, reply bool) bool {
	bucket, limit, msg := "publish", thPublishLimit(), "The profile has reached the limit of 250 API-published posts in a 24-hour period."
	if reply {
		bucket, limit, msg = "replies", thReplyLimit(), "The profile has reached the limit of 1,000 API-published replies in a 24-hour period."
	}
	if _, _, reset, ok := s.n.Take(bucket, user, 1, limit); !ok {
		s.g.usageHeaders(w, user, 100, 100, s.g.regainMinutes(reset))
		writeGraphError(w, http.StatusBadRequest, graphErrorBody{Code: 9, Message: "Application request limit reached", UserMsg: msg})
		return false
	}
	return true
}

// replyQuota is the reply part of the publishing-limit answer.
func (s *thSim) replyQuota(user string) map[string]any {
	def := thReplyLimit()
	limit, left, _, _ := s.n.Take("replies", user, 0, def)
	return map[string]any{"reply_quota_usage": limit - left, "reply_config": map[string]any{"quota_total": limit, "quota_duration": int64(def.Window / time.Second)}}
}

// replies is GET /{media-id}/replies: the post's direct replies, oldest first (reverse=true:
// newest first), with the fields Threads documents for them.
func (s *thSim) replies(w http.ResponseWriter, r *http.Request, who graphCaller) {
	id := r.PathValue("id")
	if !s.replyable(id) {
		graphError(w, http.StatusBadRequest, 100, 33, "Unsupported get request. Object with ID '"+id+"' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", false)
		return
	}
	var recs []Record
	for _, rec := range s.n.Sim.Publications(s.n.Platform) {
		if rec.ReplyTo == id {
			recs = append(recs, rec)
		}
	}
	if strings.EqualFold(r.URL.Query().Get("reverse"), "true") {
		sort.SliceStable(recs, func(i, j int) bool { return recs[i].CreatedAt.After(recs[j].CreatedAt) })
	}
	data := make([]map[string]any, 0, len(recs))
	for _, rec := range recs {
		item := map[string]any{"id": rec.ID, "timestamp": graphTime(rec.CreatedAt), "replied_to": map[string]string{"id": id},
			"is_reply": true, "is_reply_owned_by_me": rec.Account == who.User}
		if rec.Text != "" {
			item["text"] = rec.Text
		}
		if v, ok := s.n.Store.Get("thmedia:" + rec.ID); ok {
			m := v.(*graphMedia)
			item["permalink"], item["media_type"], item["username"] = m.Permalink, m.MediaType, m.Handle
		}
		data = append(data, item)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"data": data})
}
