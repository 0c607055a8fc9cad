package tiktok

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// rateWindow is TikTok's per-token sliding window; a 429 carries no reset, so it is assumed.
const rateWindow = time.Minute

// envelope is TikTok's answer: {"data":…,"error":{"code":"ok","message":"","log_id":…}}.
type envelope struct {
	Data  json.RawMessage `json:"data"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		LogID   string `json:"log_id"`
	} `json:"error"`
}

// call makes an API call and decodes the envelope's data into out. Anything but a 2xx answer with
// error.code "ok" is an error, whatever the status.
func (a *Adapter) call(ctx context.Context, rq platforms.Call, out any) error {
	r, err := platforms.Send(ctx, a.hc, platforms.TikTok, rq)
	if err != nil {
		return err
	}
	var env envelope
	if json.Unmarshal(r.Body, &env) != nil || env.Error.Code == "" {
		if r.Status >= 200 && r.Status <= 299 {
			return invalidBody(r.Status, "no TikTok envelope", rq.Create)
		}
		return classify(r.Status, "", "", rq.Create)
	}
	if r.Status < 200 || r.Status > 299 || env.Error.Code != "ok" {
		return classify(r.Status, env.Error.Code, env.Error.Message, rq.Create)
	}
	if out != nil && json.Unmarshal(env.Data, out) != nil {
		return invalidBody(r.Status, "the data does not have the documented shape", rq.Create)
	}
	return nil
}

// classify turns an error answer into a classified error: access_token_invalid (401)
// AuthExpired; rate_limit_exceeded (429) RateLimited for TikTok's one-minute window; the daily post
// cap (spam_risk_too_many_posts) and the unaudited client's user cap (reached_active_user_cap)
// RateLimited for a day; 5xx and internal_error Transient, or Unknown on the post-creating call;
// everything else Permanent with TikTok's message.
func classify(status int, code, msg string, create bool) *platforms.Error {
	if msg == "" {
		msg = strings.TrimSpace(http.StatusText(status))
	}
	e := &platforms.Error{Platform: platforms.TikTok, Status: status, Code: code, Message: msg}
	switch {
	case code == "access_token_invalid" || (status == http.StatusUnauthorized && !strings.HasPrefix(code, "scope_")):
		e.Kind = platforms.AuthExpired
	case code == "rate_limit_exceeded" || status == http.StatusTooManyRequests:
		e.Kind = platforms.RateLimited
		e.ResetAt = time.Now().Add(rateWindow)
	case code == "spam_risk_too_many_posts" || code == "reached_active_user_cap":
		e.Kind = platforms.RateLimited
		e.ResetAt = time.Now().Add(24 * time.Hour)
	case (status >= 500 || code == "internal_error") && create:
		e.Kind = platforms.Unknown
		e.Message = "TikTok answered " + strconv.Itoa(status) + " to the last chunk of the video; the post may exist: " + msg
	case status >= 500 || code == "internal_error":
		e.Kind = platforms.Transient
	default:
		e.Kind = platforms.Permanent
	}
	return e
}

// invalidBody is the error for a 2xx answer that does not say what it should.
func invalidBody(status int, what string, create bool) *platforms.Error {
	if create {
		return &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Unknown, Status: status,
			Message: "TikTok's answer to the last chunk of the video is not what the API documents (" + what + "); the post may exist"}
	}
	return &platforms.Error{Platform: platforms.TikTok, Kind: platforms.Transient, Status: status,
		Message: "TikTok's answer is not what the API documents: " + what}
}
