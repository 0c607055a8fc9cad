package bluesky

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/platforms"
)

// defaultRateWindow is assumed when a 429 says nothing about its reset (an edge 429 without
// headers): the PDS's shortest window is 5 minutes.
const defaultRateWindow = 5 * time.Minute

// proxyHeader is the atproto-proxy header naming the service the PDS forwards a call to (the
// AppView, the chat service); none when service is empty.
func proxyHeader(service string) http.Header {
	if service == "" {
		return nil
	}
	return http.Header{"Atproto-Proxy": {service}}
}

// xrpcError is the XRPC error body.
type xrpcError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// classify turns a non-2xx answer into a classified error: 400 ExpiredToken or InvalidToken and
// any 401 are AuthExpired (refresh the session once), 429 RateLimited with RateLimit-Reset, 5xx
// Transient (Unknown on the post-creating call), other statuses Permanent with the XRPC message.
func classify(r *platforms.Answer, create bool) *platforms.Error {
	var body xrpcError
	_ = json.Unmarshal(r.Body, &body)
	msg := body.Message
	if msg == "" {
		msg = body.Error
	}
	if msg == "" {
		msg = http.StatusText(r.Status)
	}
	e := &platforms.Error{Platform: platforms.Bluesky, Status: r.Status, Code: body.Error, Message: msg}
	switch {
	case r.Status == http.StatusUnauthorized, body.Error == "ExpiredToken", body.Error == "InvalidToken":
		e.Kind = platforms.AuthExpired
	case r.Status == http.StatusTooManyRequests:
		e.Kind = platforms.RateLimited
		e.ResetAt = rateReset(r.Header)
	case r.Status >= 500 && create:
		e.Kind = platforms.Unknown
		e.Message = "Bluesky answered " + strconv.Itoa(r.Status) + " to the post; it may exist: " + msg
	case r.Status >= 500:
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

// errorBody reports a 2xx answer that carries an XRPC error instead of a result.
func errorBody(r *platforms.Answer) *platforms.Error {
	var body xrpcError
	if json.Unmarshal(r.Body, &body) != nil || body.Error == "" {
		return nil
	}
	msg := body.Message
	if msg == "" {
		msg = body.Error
	}
	return &platforms.Error{Platform: platforms.Bluesky, Kind: platforms.Permanent, Status: r.Status, Code: body.Error, Message: msg}
}

// call makes a call that does not create the post and decodes a 2xx answer into out.
func (a *Adapter) call(ctx context.Context, rq platforms.Call, out any) error {
	r, err := platforms.Send(ctx, a.hc, platforms.Bluesky, rq)
	if err != nil {
		return err
	}
	if !r.OK() {
		return classify(r, false)
	}
	if e := errorBody(r); e != nil {
		return e
	}
	if out == nil {
		return nil
	}
	return platforms.Decode(platforms.Bluesky, r, out, false)
}
