package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// LinkedIn comments (the Community Management API's socialActions):
//
//	POST /rest/socialActions/{post urn}/comments {"actor","object","message":{"text"}}
//	     → 201, the comment ({id, commentUrn, actor, object, message, created}) and its id in
//	     x-restli-id. The actor must be the member or an organisation they administer, the object
//	     the post of the path.
//	GET  /rest/socialActions/{post urn}/comments?start&count → {"elements":[comment], "paging"}
//	     newest first.
//
// A comment is recorded with comment_on (not as a post: the author finder leaves it out). Comments
// spend the member's "comments" bucket (an assumed 500 a day, reset at 00:00 UTC) and over 1,250
// characters answer 422.

var liLimitComments = Limit{Count: 500, Window: 24 * time.Hour}

const liMaxComment = 1250

// liComment is a comment as the simulator keeps it.
type liComment struct {
	id, urn, actor, object, text string
	created                      time.Time
}

func (li *liSim) registerComments() {
	li.n.Mux.HandleFunc("POST /rest/socialActions/{urn}/comments", li.rest(li.createComment))
	li.n.Mux.HandleFunc("GET /rest/socialActions/{urn}/comments", li.rest(li.listComments))
}

func (c *liComment) json() map[string]any {
	return map[string]any{
		"id": c.id, "commentUrn": c.urn, "actor": c.actor, "object": c.object,
		"message": map[string]any{"text": c.text, "attributes": []any{}},
		"created": map[string]any{"actor": c.actor, "time": c.created.UnixMilli()},
	}
}

func (li *liSim) createComment(w http.ResponseWriter, r *http.Request, m liMember) {
	post := r.PathValue("urn")
	if _, ok := li.n.Store.Get("li-post:" + post); !ok {
		liError(w, http.StatusNotFound, 0, "", "Not Found: no post "+post)
		return
	}
	var req struct {
		Actor   string `json:"actor"`
		Object  string `json:"object"`
		Message *struct {
			Text string `json:"text"`
		} `json:"message"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		liError(w, http.StatusBadRequest, 100, "", "Unable to parse the request body: "+err.Error())
		return
	}
	switch {
	case !m.may(req.Actor):
		liError(w, http.StatusForbidden, 100, "ACCESS_DENIED", "Not enough permissions to comment as "+req.Actor)
		return
	case req.Object != post:
		liError(w, http.StatusUnprocessableEntity, 0, "UNPROCESSABLE_ENTITY", "/object :: must be the post of the path, "+post)
		return
	case req.Message == nil || strings.TrimSpace(req.Message.Text) == "":
		liError(w, http.StatusUnprocessableEntity, 0, "UNPROCESSABLE_ENTITY", "/message/text :: field is required")
		return
	case utf8.RuneCountInString(req.Message.Text) > liMaxComment:
		liError(w, http.StatusUnprocessableEntity, 0, "UNPROCESSABLE_ENTITY", fmt.Sprintf("/message/text :: length %d exceeds the maximum allowed length of %d", utf8.RuneCountInString(req.Message.Text), liMaxComment))
		return
	}
	if !li.take("comments", m.id, liLimitComments) {
		li.rateLimited(w, r, liNextMidnight(li.n.Sim.Now()))
		return
	}
	id := liPostID()
	c := &liComment{id: id, urn: "urn:li:comment:(" + post + "," + id + ")", actor: req.Actor, object: post, text: req.Message.Text, created: li.n.Sim.Now()}
	li.n.Store.With(func(objects map[string]any) {
		list, _ := objects["li-comments:"+post].([]*liComment)
		objects["li-comments:"+post] = append(list, c)
	})
	account := m.id
	if org, ok := strings.CutPrefix(req.Actor, "urn:li:organization:"); ok {
		account = org // an organisation's comment is the organisation's
	}
	li.n.PublishComment(c.urn, account, c.text, post)
	if li.n.TakeFault(FaultPostThenError) != "" {
		liError(w, http.StatusInternalServerError, 0, "", "Internal Server Error")
		return
	}
	w.Header().Set("x-restli-id", id)
	WriteJSON(w, http.StatusCreated, c.json())
}

func (li *liSim) listComments(w http.ResponseWriter, r *http.Request, m liMember) {
	post := r.PathValue("urn")
	if _, ok := li.n.Store.Get("li-post:" + post); !ok {
		liError(w, http.StatusNotFound, 0, "", "Not Found: no post "+post)
		return
	}
	q := r.URL.Query()
	start, _ := strconv.Atoi(q.Get("start"))
	count := 10
	if n, err := strconv.Atoi(q.Get("count")); err == nil && n > 0 {
		count = min(n, 100)
	}
	var list []*liComment
	li.n.Store.With(func(objects map[string]any) {
		stored, _ := objects["li-comments:"+post].([]*liComment)
		list = append(list, stored...)
	})
	sort.SliceStable(list, func(i, j int) bool { return list[i].created.After(list[j].created) })
	start = min(max(start, 0), len(list))
	end := min(start+count, len(list))
	elements := make([]map[string]any, 0, end-start)
	for _, c := range list[start:end] {
		elements = append(elements, c.json())
	}
	WriteJSON(w, http.StatusOK, map[string]any{"elements": elements, "paging": map[string]any{"start": start, "count": count, "total": len(list)}})
}
