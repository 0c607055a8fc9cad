package graph

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// What Instagram and Threads share: both publish through containers on a user edge, refresh
// their long-lived token itself, and list a user's posts on the same edge.

// CreateContainer posts form to a user's container edge (/{user}/media, /{user}/threads) and
// returns the container's id.
func (c *Client) CreateContainer(ctx context.Context, edgeURL, token string, form url.Values) (string, error) {
	var out struct {
		ID ID `json:"id"`
	}
	resp, err := c.Do(ctx, Call{Method: http.MethodPost, URL: edgeURL, Token: token, Params: form}, &out)
	if err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", Garbage(c.Platform, resp.Status, false, "the container answer has no id")
	}
	return string(out.ID), nil
}

// Permalink reads an object's link; a failure only leaves the URL empty.
func (c *Client) Permalink(ctx context.Context, objectURL, token string) string {
	var out struct {
		Permalink string `json:"permalink"`
	}
	if _, err := c.Do(ctx, Call{Method: http.MethodGet, URL: objectURL, Token: token, Params: url.Values{"fields": {"permalink"}}}, &out); err != nil {
		return ""
	}
	return out.Permalink
}

// RefreshLongLived renews a 60-day token itself (grant ig_refresh_token or th_refresh_token); the
// account keeps its id and handle. A token that can no longer be refreshed is a Permanent error
// asking to reconnect.
func (c *Client) RefreshLongLived(ctx context.Context, baseURL, grant string, cred platforms.Credentials) (platforms.Credentials, error) {
	var tok Token
	_, err := c.Do(ctx, Call{Method: http.MethodGet, URL: baseURL + "/refresh_access_token", Params: url.Values{"grant_type": {grant}, "access_token": {cred.AccessToken}}}, &tok)
	if err != nil {
		return cred, ReconnectError(err)
	}
	if tok.AccessToken == "" {
		return cred, Garbage(c.Platform, 200, false, "the refresh answered no access token")
	}
	out := cred
	out.AccessToken = tok.AccessToken
	out.ExpiresAt = tok.Expiry(time.Now())
	return out, nil
}

// LookupPages bounds the pages of 100 a lookup reads through a Graph API edge (a user's posts, a
// Page's feed, an object's comments): pages that end before the edge's end or the attempt's time
// leave the outcome unknown (platforms.LookupIncomplete).
const LookupPages = 3

// FindPost looks through a user's post edge for a post whose textField (caption, text) is exactly
// text, published at or after since (up to three pages of 100).
func (c *Client) FindPost(ctx context.Context, edgeURL, token, textField, text string, since time.Time) (platforms.Publication, bool, error) {
	params := url.Values{"fields": {"id," + textField + ",timestamp,permalink"}, "limit": {"100"}, "since": {strconv.FormatInt(since.Unix()-1, 10)}}
	next := edgeURL
	floor := since.Truncate(time.Second)
	for page := 0; page < LookupPages && next != ""; page++ {
		var out struct {
			Data   []json.RawMessage `json:"data"`
			Paging struct {
				Next string `json:"next"`
			} `json:"paging"`
		}
		if _, err := c.Do(ctx, Call{Method: http.MethodGet, URL: next, Token: token, Params: params}, &out); err != nil {
			return platforms.Publication{}, false, err
		}
		for _, raw := range out.Data {
			var d struct {
				ID        ID     `json:"id"`
				Timestamp string `json:"timestamp"`
				Permalink string `json:"permalink"`
			}
			var fields map[string]json.RawMessage
			if json.Unmarshal(raw, &d) != nil || json.Unmarshal(raw, &fields) != nil {
				continue
			}
			var body string
			_ = json.Unmarshal(fields[textField], &body)
			t, err := ParseTime(d.Timestamp)
			if err != nil || t.Before(floor) || body != text || d.ID == "" {
				continue
			}
			return platforms.Publication{ID: string(d.ID), URL: d.Permalink}, true, nil
		}
		next, params = out.Paging.Next, nil
	}
	if next != "" {
		return platforms.Publication{}, false, platforms.LookupIncomplete(c.Platform, LookupPages)
	}
	return platforms.Publication{}, false, nil
}
