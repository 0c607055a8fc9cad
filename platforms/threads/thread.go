package threads

// Threads and first comments (networks.md §6.2): a thread's next part, and a first comment, are
// the profile's replies: a container created with reply_to_id, waited for and published with
// threads_publish like a post. Replies spend the profile's 1,000 replies per 24 hours
// (reply_quota_usage of threads_publishing_limit), not its 250 posts. They are found again on the
// parent's /replies edge.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/graph"
)

var (
	_ platforms.Threader       = (*Adapter)(nil)
	_ platforms.FirstCommenter = (*Adapter)(nil)
)

// replyQuota reads the profile's reply quota; a used-up one is RateLimited before anything is
// created.
func (a *Adapter) replyQuota(ctx context.Context, c platforms.Credentials) (platforms.RateInfo, error) {
	var out struct {
		Data []struct {
			ReplyQuotaUsage int `json:"reply_quota_usage"`
			ReplyConfig     struct {
				QuotaTotal    int `json:"quota_total"`
				QuotaDuration int `json:"quota_duration"`
			} `json:"reply_config"`
		} `json:"data"`
	}
	resp, err := a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: a.api("/" + url.PathEscape(c.UserID) + "/threads_publishing_limit"), Token: c.AccessToken,
		Params: url.Values{"fields": {"reply_quota_usage,reply_config"}}}, &out)
	if err != nil {
		return platforms.RateInfo{}, err
	}
	if len(out.Data) == 0 || out.Data[0].ReplyConfig.QuotaTotal <= 0 {
		return resp.Rate, nil
	}
	d := out.Data[0]
	info := platforms.RateInfo{Limit: d.ReplyConfig.QuotaTotal, Remaining: max(0, d.ReplyConfig.QuotaTotal-d.ReplyQuotaUsage), Known: true}
	if info.Remaining == 0 {
		now := time.Now()
		_, reset := graph.ParseUsage(resp.Header, now)
		if reset.IsZero() {
			reset = now.Add(graph.DefaultRateLimitWait)
		}
		return info, &platforms.Error{Platform: platforms.Threads, Kind: platforms.RateLimited, Status: resp.Status, ResetAt: reset,
			Message: fmt.Sprintf("the reply quota of %d replies per %s is used up", d.ReplyConfig.QuotaTotal, time.Duration(d.ReplyConfig.QuotaDuration)*time.Second)}
	}
	return info, nil
}

// PublishReply publishes p (text, a photo or video, or a carousel of 2 to 20) as the profile's
// reply to parent: a container with reply_to_id, waited for, then threads_publish, the only call
// that creates the reply (a 5xx or a lost answer there is Unknown; LookupReply resolves it). The
// post's options (reply control, topic tag) belong to the thread's first post.
func (a *Adapter) PublishReply(ctx context.Context, c platforms.Credentials, root, parent platforms.Publication, p platforms.Post) (platforms.Result, error) {
	if err := a.Validate(p); err != nil {
		return platforms.Result{}, err
	}
	if parent.ID == "" || strings.ContainsAny(parent.ID, "/?#") {
		return platforms.Result{}, platforms.Errorf(platforms.Threads, platforms.Permanent, 0, "%q is not a Threads post id", parent.ID)
	}
	if err := mediaURLs(p); err != nil {
		return platforms.Result{}, err
	}
	rate, err := a.replyQuota(ctx, c)
	if err != nil {
		return platforms.Result{}, err
	}
	return a.publish(ctx, c, p, rate, func(form url.Values) { form.Set("reply_to_id", parent.ID) })
}

// replyPages bounds how many pages of a post's replies LookupReply reads.
const replyPages = 3

// LookupReply reads parent's replies (GET /{media-id}/replies, newest first) for the profile's
// own (is_reply_owned_by_me, or its username) with exactly p's text, published at or after since.
func (a *Adapter) LookupReply(ctx context.Context, c platforms.Credentials, root, parent platforms.Publication, p platforms.Post, since time.Time) (platforms.Publication, bool, error) {
	if parent.ID == "" || strings.ContainsAny(parent.ID, "/?#") {
		return platforms.Publication{}, false, platforms.Errorf(platforms.Threads, platforms.Permanent, 0, "%q is not a Threads post id", parent.ID)
	}
	params := url.Values{"fields": {"id,text,timestamp,permalink,username,is_reply_owned_by_me"}, "reverse": {"true"}}
	next := a.api("/" + url.PathEscape(parent.ID) + "/replies")
	floor := since.Truncate(time.Second)
	for page := 0; page < replyPages && next != ""; page++ {
		var out struct {
			Data []struct {
				ID        graph.ID `json:"id"`
				Text      string   `json:"text"`
				Timestamp string   `json:"timestamp"`
				Permalink string   `json:"permalink"`
				Username  string   `json:"username"`
				Mine      bool     `json:"is_reply_owned_by_me"`
			} `json:"data"`
			Paging struct {
				Next string `json:"next"`
			} `json:"paging"`
		}
		if _, err := a.client.Do(ctx, graph.Call{Method: http.MethodGet, URL: next, Token: c.AccessToken, Params: params}, &out); err != nil {
			return platforms.Publication{}, false, err
		}
		for _, d := range out.Data {
			mine := d.Mine || (c.Handle != "" && strings.EqualFold(d.Username, c.Handle))
			t, err := graph.ParseTime(d.Timestamp)
			if !mine || err != nil || t.Before(floor) || d.Text != p.Text || d.ID == "" {
				continue
			}
			return platforms.Publication{ID: string(d.ID), URL: d.Permalink}, true, nil
		}
		next, params = out.Paging.Next, nil
	}
	return platforms.Publication{}, false, nil
}

// PublishComment comments on the profile's post: its reply to it (PublishReply).
func (a *Adapter) PublishComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string) (platforms.Result, error) {
	return a.PublishReply(ctx, c, on, on, platforms.Post{Text: text})
}

// LookupComment finds the profile's reply to its post with this text (LookupReply).
func (a *Adapter) LookupComment(ctx context.Context, c platforms.Credentials, on platforms.Publication, text string, since time.Time) (platforms.Publication, bool, error) {
	return a.LookupReply(ctx, c, on, on, platforms.Post{Text: text}, since)
}
