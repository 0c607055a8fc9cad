package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// Container names how a network reports the processing state of a media container: Instagram
// answers status_code (with details in status), Threads answers status (with error_message).
type Container struct {
	StatusField  string
	MessageField string
}

// Wait polls GET {containerURL}?fields=... every interval until the container is FINISHED. ERROR
// and EXPIRED are Permanent (the media was refused, or the container is too old); a container
// still processing after limit is Transient, as are up to three failed polls in a row. Nothing is
// published while a container is processed, so no failure here is Unknown.
func (c *Client) Wait(ctx context.Context, kind Container, containerURL, token string, interval, limit time.Duration) error {
	if interval <= 0 {
		interval = time.Second
	}
	deadline := time.Now().Add(limit)
	failures := 0
	for {
		var body map[string]json.RawMessage
		_, err := c.Do(ctx, Call{Method: http.MethodGet, URL: containerURL, Token: token, Params: url.Values{"fields": {kind.StatusField + "," + kind.MessageField}}}, &body)
		if err != nil {
			if ctx.Err() != nil || platforms.KindOf(err) != platforms.Transient || failures >= 2 {
				return err
			}
			failures++
		} else {
			failures = 0
			status, msg := str(body[kind.StatusField]), str(body[kind.MessageField])
			switch status {
			case "FINISHED":
				return nil
			case "ERROR":
				return &platforms.Error{Platform: c.Platform, Kind: platforms.Permanent, Message: "the network could not process the media: " + orDefault(msg, "ERROR")}
			case "EXPIRED":
				return &platforms.Error{Platform: c.Platform, Kind: platforms.Permanent, Message: "the media container expired before it was published"}
			case "PUBLISHED":
				return &platforms.Error{Platform: c.Platform, Kind: platforms.Permanent, Message: "the media container was already published"}
			}
		}
		if time.Now().Add(interval).After(deadline) {
			return &platforms.Error{Platform: c.Platform, Kind: platforms.Transient, Message: fmt.Sprintf("media processing did not finish within %s", limit)}
		}
		if err := platforms.Sleep(ctx, interval); err != nil {
			return &platforms.Error{Platform: c.Platform, Kind: platforms.Transient, Message: "waiting for media processing: " + err.Error(), Err: err}
		}
	}
}

func str(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return ""
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Quota is a publishing-limit answer (content_publishing_limit, threads_publishing_limit).
type Quota struct {
	Data []struct {
		QuotaUsage int `json:"quota_usage"`
		Config     struct {
			QuotaTotal    int `json:"quota_total"`
			QuotaDuration int `json:"quota_duration"`
		} `json:"config"`
	} `json:"data"`
}

// Check reads the quota; ok is false when the answer held none. A used-up quota is RateLimited,
// with ResetAt from the usage headers or DefaultRateLimitWait.
func (q Quota) Check(p platforms.Platform, resp Response) (info platforms.RateInfo, err error) {
	if len(q.Data) == 0 || q.Data[0].Config.QuotaTotal <= 0 {
		return platforms.RateInfo{}, nil
	}
	d := q.Data[0]
	info = platforms.RateInfo{Limit: d.Config.QuotaTotal, Remaining: max(0, d.Config.QuotaTotal-d.QuotaUsage), Known: true}
	if info.Remaining == 0 {
		now := time.Now()
		_, reset := ParseUsage(resp.Header, now)
		if reset.IsZero() {
			reset = now.Add(DefaultRateLimitWait)
		}
		return info, &platforms.Error{Platform: p, Kind: platforms.RateLimited, Status: resp.Status, Message: fmt.Sprintf("the publishing quota of %d posts per %s is used up", d.Config.QuotaTotal, time.Duration(d.Config.QuotaDuration)*time.Second), ResetAt: reset}
	}
	return info, nil
}
