package graph

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// What Instagram and Facebook share for a first comment: the account comments on its post with
// POST /{object-id}/comments (message) and finds the comment again on the same edge.

// Comment posts message on an object's comments edge and returns the new comment's id. It is
// the call that creates the comment: a 5xx or a lost answer is Unknown.
func (c *Client) Comment(ctx context.Context, edgeURL, token, message string) (string, Response, error) {
	var out struct {
		ID ID `json:"id"`
	}
	resp, err := c.Do(ctx, Call{Method: http.MethodPost, URL: edgeURL, Token: token, Params: url.Values{"message": {message}}, Create: true}, &out)
	if err != nil {
		return "", resp, err
	}
	if out.ID == "" {
		return "", resp, Garbage(c.Platform, resp.Status, true, "the comment answered no id")
	}
	return string(out.ID), resp, nil
}

// CommentFields name what an object's comments edge answers (the comment's text and time, and
// whether it has the author's username beside from) and, when the edge takes one, the order that
// lists the newest first.
type CommentFields struct {
	Text, Time string
	Username   bool
	Order      string
}

// FindComment reads an object's comments edge (up to three pages of 100) for a comment whose
// author is the account (from.id is userID, or its username or name is handle) with exactly this
// text, created at or after since, and returns its id.
func (c *Client) FindComment(ctx context.Context, edgeURL, token string, f CommentFields, userID, handle, text string, since time.Time) (string, bool, error) {
	fields := "id," + f.Text + "," + f.Time + ",from"
	if f.Username {
		fields += ",username"
	}
	params := url.Values{"fields": {fields}, "limit": {"100"}}
	if f.Order != "" {
		params.Set("order", f.Order)
	}
	next := edgeURL
	floor := since.Truncate(time.Second)
	for page := 0; page < 3 && next != ""; page++ {
		var out struct {
			Data   []map[string]json.RawMessage `json:"data"`
			Paging struct {
				Next string `json:"next"`
			} `json:"paging"`
		}
		if _, err := c.Do(ctx, Call{Method: http.MethodGet, URL: next, Token: token, Params: params}, &out); err != nil {
			return "", false, err
		}
		for _, d := range out.Data {
			var id ID
			var body, at, username string
			var from struct {
				ID       ID     `json:"id"`
				Username string `json:"username"`
				Name     string `json:"name"`
			}
			_ = json.Unmarshal(d["id"], &id)
			_ = json.Unmarshal(d[f.Text], &body)
			_ = json.Unmarshal(d[f.Time], &at)
			_ = json.Unmarshal(d["from"], &from)
			_ = json.Unmarshal(d["username"], &username)
			mine := (userID != "" && string(from.ID) == userID) || (handle != "" && (from.Username == handle || from.Name == handle || username == handle))
			t, err := ParseTime(at)
			if !mine || err != nil || t.Before(floor) || body != text || id == "" {
				continue
			}
			return string(id), true, nil
		}
		next, params = out.Paging.Next, nil
	}
	return "", false, nil
}
