package linkedin

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// restHeader is the versioned REST API's headers (LinkedIn-Version, X-Restli-Protocol-Version)
// and the further header pairs kv (name, value, ...).
func (a *Adapter) restHeader(kv ...string) http.Header {
	h := http.Header{}
	h.Set("LinkedIn-Version", a.version())
	h.Set("X-Restli-Protocol-Version", "2.0.0")
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// apiError is the union of LinkedIn's REST error body and its OAuth error body.
type apiError struct {
	Status           int    `json:"status"`
	ServiceErrorCode int    `json:"serviceErrorCode"`
	Code             string `json:"code"`
	Message          string `json:"message"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

func (e apiError) message() string {
	switch {
	case e.Message != "":
		return e.Message
	case e.ErrorDescription != "":
		return e.ErrorDescription
	}
	return e.Error
}

func (e apiError) code() string {
	switch {
	case e.ServiceErrorCode != 0:
		return strconv.Itoa(e.ServiceErrorCode)
	case e.Code != "":
		return e.Code
	}
	return e.Error
}

// nextMidnight is when LinkedIn's daily limits reset: the next 00:00 UTC.
func nextMidnight(now time.Time) time.Time {
	now = now.UTC()
	return time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
}

// classify turns a non-2xx answer into a classified error: 401 (serviceErrorCode 65600 invalid or
// expired, 65601 revoked) AuthExpired; 429 RateLimited until the next 00:00 UTC, since LinkedIn
// sends no rate-limit headers; 426 (the LinkedIn-Version is retired) and other 4xx Permanent; 5xx
// Transient, or Unknown on the post-creating call.
func classify(r *platforms.Answer, create bool) *platforms.Error {
	var body apiError
	_ = json.Unmarshal(r.Body, &body)
	msg := body.message()
	if msg == "" {
		msg = http.StatusText(r.Status)
	}
	e := &platforms.Error{Platform: platforms.LinkedIn, Status: r.Status, Code: body.code(), Message: msg}
	switch {
	case r.Status == http.StatusUnauthorized:
		e.Kind = platforms.AuthExpired
	case r.Status == http.StatusTooManyRequests:
		e.Kind = platforms.RateLimited
		e.ResetAt = nextMidnight(time.Now())
	case r.Status == http.StatusUpgradeRequired:
		e.Kind = platforms.Permanent
		e.Message = "LinkedIn no longer serves the API version the adapter uses: " + msg
	case r.Status >= 500 && create:
		e.Kind = platforms.Unknown
		e.Message = "LinkedIn answered " + strconv.Itoa(r.Status) + " to the post; it may exist: " + msg
	case r.Status >= 500:
		e.Kind = platforms.Transient
	default:
		e.Kind = platforms.Permanent
	}
	return e
}

// errorBody reports a 2xx answer that carries an error instead of a result.
func errorBody(r *platforms.Answer) *platforms.Error {
	var body apiError
	if json.Unmarshal(r.Body, &body) != nil || (body.ServiceErrorCode == 0 && body.Error == "" && (body.Status < 400 || body.Message == "")) {
		return nil
	}
	return &platforms.Error{Platform: platforms.LinkedIn, Kind: platforms.Permanent, Status: r.Status, Code: body.code(), Message: body.message()}
}

// call makes a call that does not create the post and decodes a 2xx answer into out (nil: the
// body is ignored).
func (a *Adapter) call(ctx context.Context, rq platforms.Call, out any) (*platforms.Answer, error) {
	r, err := platforms.Send(ctx, a.hc, platforms.LinkedIn, rq)
	if err != nil {
		return nil, err
	}
	if !r.OK() {
		return r, classify(r, false)
	}
	if e := errorBody(r); e != nil {
		return r, e
	}
	if out != nil {
		if err := json.Unmarshal(r.Body, out); err != nil {
			return r, platforms.Garbled(platforms.LinkedIn, r, false, err)
		}
	}
	return r, nil
}
