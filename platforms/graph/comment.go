package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/platforms"
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
// text, created at or after since, and returns its id. "Not found" is said only of a listing read
// to its end, or, newest first (f.Order), past since; pages that end before either are
// platforms.ErrLookupIncomplete, as the posts' lookups answer (the comment may be further down).
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
	passed := false // a comment older than since was read, newest first: nothing further down is newer
	for page := 0; page < LookupPages && next != "" && !passed; page++ {
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
			if err == nil && t.Before(floor) && f.Order != "" {
				passed = true
			}
			if !mine || err != nil || t.Before(floor) || body != text || id == "" {
				continue
			}
			return string(id), true, nil
		}
		next, params = out.Paging.Next, nil
	}
	if next != "" && !passed {
		return "", false, platforms.LookupIncomplete(c.Platform, LookupPages)
	}
	return "", false, nil
}

// FirstComments is an account's first comment on its own object through the object's comments
// edge (a Facebook Page's post, an Instagram media): what both adapters' FirstCommenter does,
// with each network's field names. A comment has no link of its own: its URL is the object's.
type FirstComments struct {
	Platform platforms.Platform
	Client   *Client
	// Noun names the object in refusals ("post", "media").
	Noun   string
	Fields CommentFields
}

// check refuses a comment the network would refuse, and an object id that is not one.
func (f FirstComments) check(on platforms.Publication, text string) error {
	switch n := utf8.RuneCountInString(text); {
	case strings.TrimSpace(text) == "":
		return platforms.Errorf(f.Platform, platforms.Invalid, 0, "a comment needs text")
	case n > platforms.CommentMax(f.Platform):
		return platforms.Errorf(f.Platform, platforms.Invalid, 0, "the comment is %d characters; %s allows %d", n, f.Platform.Name(), platforms.CommentMax(f.Platform))
	case on.ID == "" || strings.ContainsAny(on.ID, "/?#"):
		return &platforms.Error{Platform: f.Platform, Kind: platforms.Permanent, Message: fmt.Sprintf("%q is not a valid %s %s id", on.ID, f.Platform.Name(), f.Noun), Err: platforms.ErrNotFound}
	}
	return nil
}

// Publish comments text on on through its comments edge at api (the edge's URL for an object
// path). A 5xx or a lost answer is Unknown (Lookup resolves it).
func (f FirstComments) Publish(ctx context.Context, api func(path string) string, c platforms.Credentials, on platforms.Publication, text string) (platforms.Result, error) {
	if err := f.check(on, text); err != nil {
		return platforms.Result{}, err
	}
	id, resp, err := f.Client.Comment(ctx, api("/"+url.PathEscape(on.ID)+"/comments"), c.AccessToken, text)
	if err != nil {
		return platforms.Result{}, err
	}
	return platforms.Result{Publication: platforms.Publication{ID: id, URL: on.URL}, Rate: resp.Rate}, nil
}

// Lookup reads on's comments for the account's with exactly this text, created at or after
// since.
func (f FirstComments) Lookup(ctx context.Context, api func(path string) string, c platforms.Credentials, on platforms.Publication, text string, since time.Time) (platforms.Publication, bool, error) {
	if err := f.check(on, text); err != nil {
		return platforms.Publication{}, false, err
	}
	id, found, err := f.Client.FindComment(ctx, api("/"+url.PathEscape(on.ID)+"/comments"), c.AccessToken, f.Fields, c.UserID, c.Handle, text, since)
	if err != nil || !found {
		return platforms.Publication{}, false, err
	}
	return platforms.Publication{ID: id, URL: on.URL}, true, nil
}
