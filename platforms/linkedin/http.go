package linkedin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// maxResponse bounds how much of an answer is read.
const maxResponse = 4 << 20

// request is one call to LinkedIn.
type request struct {
	method, url string
	body        []byte
	contentType string
	bearer      string
	// rest adds the versioned REST headers (LinkedIn-Version, X-Restli-Protocol-Version).
	rest bool
	// header holds further headers.
	header map[string]string
	// create marks the call that creates the post: once it was sent, a failure leaves the outcome
	// unknown.
	create bool
}

// response is an answer read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) ok() bool { return r.status >= 200 && r.status <= 299 }

// send makes the call. Failures without an answer are classified: before the request was written
// Transient; after it was written Unknown for the post-creating call and Transient otherwise.
func (a *Adapter) send(ctx context.Context, rq request) (*response, error) {
	c := platforms.Call{Method: rq.method, URL: rq.url, Body: rq.body, Header: http.Header{}, Bearer: rq.bearer, Create: rq.create}
	if rq.contentType != "" {
		c.Header.Set("Content-Type", rq.contentType)
	}
	if rq.rest {
		c.Header.Set("LinkedIn-Version", a.version())
		c.Header.Set("X-Restli-Protocol-Version", "2.0.0")
	}
	for k, v := range rq.header {
		c.Header.Set(k, v)
	}
	ans, err := platforms.Send(ctx, a.hc, platforms.LinkedIn, c)
	if err != nil {
		return nil, err
	}
	return &response{status: ans.Status, header: ans.Header, body: ans.Body}, nil
}

// connError classifies a call that got no (complete) answer.
func connError(err error, sent, create bool) *platforms.Error {
	return platforms.NoAnswer(platforms.LinkedIn, err, sent, create)
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
func classify(r *response, create bool) *platforms.Error {
	var body apiError
	_ = json.Unmarshal(r.body, &body)
	msg := body.message()
	if msg == "" {
		msg = http.StatusText(r.status)
	}
	e := &platforms.Error{Platform: platforms.LinkedIn, Status: r.status, Code: body.code(), Message: msg}
	switch {
	case r.status == http.StatusUnauthorized:
		e.Kind = platforms.AuthExpired
	case r.status == http.StatusTooManyRequests:
		e.Kind = platforms.RateLimited
		e.ResetAt = nextMidnight(time.Now())
	case r.status == http.StatusUpgradeRequired:
		e.Kind = platforms.Permanent
		e.Message = "LinkedIn no longer serves the API version the adapter uses: " + msg
	case r.status >= 500 && create:
		e.Kind = platforms.Unknown
		e.Message = "LinkedIn answered " + strconv.Itoa(r.status) + " to the post; it may exist: " + msg
	case r.status >= 500:
		e.Kind = platforms.Transient
	default:
		e.Kind = platforms.Permanent
	}
	return e
}

// garbage classifies a 2xx answer that is not what LinkedIn sends: Unknown on the post-creating
// call (the post probably exists but its URN is unknown; Lookup resolves it), Transient elsewhere.
func garbage(r *response, create bool, err error) *platforms.Error {
	kind := platforms.Transient
	if create {
		kind = platforms.Unknown
	}
	return &platforms.Error{Platform: platforms.LinkedIn, Kind: kind, Status: r.status, Message: fmt.Sprintf("unexpected answer from LinkedIn (HTTP %d)", r.status), Err: err}
}

// errorBody reports a 2xx answer that carries an error instead of a result.
func errorBody(r *response) *platforms.Error {
	var body apiError
	if json.Unmarshal(r.body, &body) != nil || (body.ServiceErrorCode == 0 && body.Error == "" && (body.Status < 400 || body.Message == "")) {
		return nil
	}
	return &platforms.Error{Platform: platforms.LinkedIn, Kind: platforms.Permanent, Status: r.status, Code: body.code(), Message: body.message()}
}

// call makes a call that does not create the post and decodes a 2xx answer into out (nil: the
// body is ignored).
func (a *Adapter) call(ctx context.Context, rq request, out any) (*response, error) {
	r, err := a.send(ctx, rq)
	if err != nil {
		return nil, err
	}
	if !r.ok() {
		return r, classify(r, false)
	}
	if e := errorBody(r); e != nil {
		return r, e
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			return r, garbage(r, false, err)
		}
	}
	return r, nil
}

// ctxError classifies a context that ended between calls (nothing in flight).
func ctxError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &platforms.Error{Platform: platforms.LinkedIn, Kind: platforms.Transient, Message: "stopped: " + err.Error(), Err: err}
	}
	return err
}
