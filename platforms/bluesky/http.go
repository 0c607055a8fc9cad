package bluesky

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// maxResponse bounds how much of an answer is read.
const maxResponse = 4 << 20

// defaultRateWindow is assumed when a 429 says nothing about its reset (an edge 429 without
// headers): the PDS's shortest window is 5 minutes.
const defaultRateWindow = 5 * time.Minute

// request is one XRPC call.
type request struct {
	method, url string
	body        []byte
	contentType string
	bearer      string
	// proxy is the atproto-proxy header: the service the PDS forwards the call to (the AppView,
	// the chat service).
	proxy string
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
	if rq.proxy != "" {
		c.Header.Set("atproto-proxy", rq.proxy)
	}
	ans, err := platforms.Send(ctx, a.hc, platforms.Bluesky, c)
	if err != nil {
		return nil, err
	}
	return &response{status: ans.Status, header: ans.Header, body: ans.Body}, nil
}

// connError classifies a call that got no (complete) answer.
func connError(err error, sent, create bool) *platforms.Error {
	return platforms.NoAnswer(platforms.Bluesky, err, sent, create)
}

// xrpcError is the XRPC error body.
type xrpcError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// classify turns a non-2xx answer into a classified error: 400 ExpiredToken or InvalidToken and
// any 401 are AuthExpired (refresh the session once), 429 RateLimited with RateLimit-Reset, 5xx
// Transient (Unknown on the post-creating call), other statuses Permanent with the XRPC message.
func classify(r *response, create bool) *platforms.Error {
	var body xrpcError
	_ = json.Unmarshal(r.body, &body)
	msg := body.Message
	if msg == "" {
		msg = body.Error
	}
	if msg == "" {
		msg = http.StatusText(r.status)
	}
	e := &platforms.Error{Platform: platforms.Bluesky, Status: r.status, Code: body.Error, Message: msg}
	switch {
	case r.status == http.StatusUnauthorized, body.Error == "ExpiredToken", body.Error == "InvalidToken":
		e.Kind = platforms.AuthExpired
	case r.status == http.StatusTooManyRequests:
		e.Kind = platforms.RateLimited
		e.ResetAt = rateReset(r.header)
	case r.status >= 500 && create:
		e.Kind = platforms.Unknown
		e.Message = "Bluesky answered " + strconv.Itoa(r.status) + " to the post; it may exist: " + msg
	case r.status >= 500:
		e.Kind = platforms.Transient
	default:
		e.Kind = platforms.Permanent
	}
	return e
}

// rateReset reads RateLimit-Reset: epoch seconds as the PDS sends it, or (IETF draft) seconds from
// now when the number is small; without it the window of RateLimit-Policy, else 5 minutes.
func rateReset(h http.Header) time.Time {
	if n, err := strconv.ParseInt(strings.TrimSpace(h.Get("RateLimit-Reset")), 10, 64); err == nil && n > 0 {
		if n > 1_000_000_000 {
			return time.Unix(n, 0)
		}
		return time.Now().Add(time.Duration(n) * time.Second)
	}
	if _, w, ok := strings.Cut(h.Get("RateLimit-Policy"), "w="); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(w, ";", 2)[0])); err == nil && n > 0 {
			return time.Now().Add(time.Duration(n) * time.Second)
		}
	}
	return time.Now().Add(defaultRateWindow)
}

// rateInfo reads the RateLimit-* headers of an answer.
func rateInfo(h http.Header) platforms.RateInfo {
	limit, err1 := strconv.Atoi(h.Get("RateLimit-Limit"))
	remaining, err2 := strconv.Atoi(h.Get("RateLimit-Remaining"))
	if err1 != nil || err2 != nil || h.Get("RateLimit-Reset") == "" {
		return platforms.RateInfo{}
	}
	return platforms.RateInfo{Limit: limit, Remaining: remaining, Reset: rateReset(h), Known: true}
}

// decode parses a 2xx answer into v; a body that does not parse is a garbage answer.
func decode(r *response, v any, create bool) error {
	if err := json.Unmarshal(r.body, v); err != nil {
		return garbage(r, create, err)
	}
	return nil
}

// garbage classifies a 2xx answer whose body is not what Bluesky sends. On the post-creating call
// the record probably exists but its URI is unknown, so the outcome is Unknown (Lookup resolves
// it); elsewhere the answer is Transient.
func garbage(r *response, create bool, err error) *platforms.Error {
	kind := platforms.Transient
	if create {
		kind = platforms.Unknown
	}
	return &platforms.Error{Platform: platforms.Bluesky, Kind: kind, Status: r.status, Message: fmt.Sprintf("unexpected answer from Bluesky (HTTP %d)", r.status), Err: err}
}

// errorBody reports a 2xx answer that carries an XRPC error instead of a result.
func errorBody(r *response) *platforms.Error {
	var body xrpcError
	if json.Unmarshal(r.body, &body) != nil || body.Error == "" {
		return nil
	}
	msg := body.Message
	if msg == "" {
		msg = body.Error
	}
	return &platforms.Error{Platform: platforms.Bluesky, Kind: platforms.Permanent, Status: r.status, Code: body.Error, Message: msg}
}

// call makes a call that does not create the post and decodes a 2xx answer into out.
func (a *Adapter) call(ctx context.Context, rq request, out any) error {
	r, err := a.send(ctx, rq)
	if err != nil {
		return err
	}
	if !r.ok() {
		return classify(r, false)
	}
	if e := errorBody(r); e != nil {
		return e
	}
	if out == nil {
		return nil
	}
	return decode(r, out, false)
}

// ctxError classifies a context that ended between calls (nothing in flight).
func ctxError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &platforms.Error{Platform: platforms.Bluesky, Kind: platforms.Transient, Message: "stopped: " + err.Error(), Err: err}
	}
	return err
}
