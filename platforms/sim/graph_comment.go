package sim

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// graphComments serves an object's comments edge on Instagram and Facebook:
//
//	POST /{object-id}/comments  message → {"id"}; the comment of the token's account (an
//	                            Instagram user, a Facebook Page) on the post, recorded with
//	                            comment_on. own limits it to the account's own posts (Instagram).
//	GET  /{object-id}/comments  the post's comments, newest first: id, the text under textField
//	                            ("text", "message"), the time under timeField ("timestamp",
//	                            "created_time"), from {id, username or name} and username.
//
// Comments spend the call budget like every Graph call; a comment over max characters or without
// text, and a field the network's comments do not have, answer error 100.
func (g *graphAPI) comments(own bool, textField, timeField string, max int) {
	post := func(w http.ResponseWriter, r *http.Request, who graphCaller) (Record, bool) {
		id := r.PathValue("id")
		rec, ok := g.n.Post(id)
		if !ok || rec.CommentOn != "" || (own && rec.Account != who.User) {
			graphError(w, http.StatusBadRequest, 100, 33, "Unsupported request. Object with ID '"+id+"' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", false)
			return Record{}, false
		}
		return rec, true
	}
	g.api("POST /{id}/comments", func(w http.ResponseWriter, r *http.Request, who graphCaller) {
		rec, ok := post(w, r, who)
		if !ok {
			return
		}
		text := r.FormValue("message")
		switch n := utf8.RuneCountInString(text); {
		case strings.TrimSpace(text) == "":
			graphError(w, http.StatusBadRequest, 100, 0, "(#100) The parameter message is required", false)
			return
		case n > max:
			graphError(w, http.StatusBadRequest, 100, 0, fmt.Sprintf("(#100) Param message must be at most %d characters long (got %d)", max, n), false)
			return
		}
		id := graphID()
		if i := strings.IndexByte(rec.ID, '_'); i >= 0 { // a Facebook post "{page}_{post}": its comments are "{post}_{comment}"
			id = rec.ID[i+1:] + "_" + id
		}
		g.n.Store.Put("comment-author:"+id, who.Handle)
		g.n.PublishComment(id, who.User, text, rec.ID)
		if g.n.TakeFault(FaultPostThenError) != "" {
			graphError(w, http.StatusInternalServerError, 2, 0, "An unexpected error has occurred. Please retry your request later.", true)
			return
		}
		WriteJSON(w, http.StatusOK, map[string]any{"id": id})
	})
	known := map[string]bool{"id": true, "from": true, "like_count": true, textField: true, timeField: true}
	if textField == "text" { // Instagram's comment fields
		for _, f := range []string{"username", "hidden", "parent_id", "media", "replies", "user"} {
			known[f] = true
		}
	} else { // Facebook's
		for _, f := range []string{"comment_count", "parent", "permalink_url", "is_hidden", "attachment", "can_comment", "message_tags"} {
			known[f] = true
		}
	}
	g.api("GET /{id}/comments", func(w http.ResponseWriter, r *http.Request, who graphCaller) {
		rec, ok := post(w, r, who)
		if !ok {
			return
		}
		for _, f := range strings.Split(r.URL.Query().Get("fields"), ",") {
			if f = strings.TrimSpace(f); f != "" && !known[f] {
				graphError(w, http.StatusBadRequest, 100, 0, "(#100) Tried accessing nonexisting field ("+f+") on node type (Comment)", false)
				return
			}
		}
		list := g.n.CommentsOn(rec.ID)
		sort.SliceStable(list, func(i, j int) bool { return list[i].CreatedAt.After(list[j].CreatedAt) })
		limit := 25
		if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 {
			limit = min(n, 100)
		}
		data := make([]map[string]any, 0, min(limit, len(list)))
		for _, c := range list[:min(limit, len(list))] {
			handle := ""
			if v, ok := g.n.Store.Get("comment-author:" + c.ID); ok {
				handle = v.(string)
			}
			from := map[string]any{"id": c.Account, "username": handle}
			if textField == "message" {
				from = map[string]any{"id": c.Account, "name": handle}
			}
			data = append(data, map[string]any{"id": c.ID, textField: c.Text, timeField: graphTime(c.CreatedAt), "from": from, "username": handle})
		}
		WriteJSON(w, http.StatusOK, map[string]any{"data": data})
	})
}
