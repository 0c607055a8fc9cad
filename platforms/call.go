package platforms

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// MaxAnswer bounds how much of a network's answer an adapter reads.
const MaxAnswer = 4 << 20

// DefaultHTTPClient is the client adapters use when their Config has none. It has no overall
// deadline, because a video upload may take long and the caller's context bounds every call, but
// it bounds connecting, the TLS handshake and the wait for an answer once a request was sent.
func DefaultHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   16,
	}}
}

// Call is one HTTP request an adapter makes.
type Call struct {
	Method, URL string
	Body        []byte
	// ContentType, when set, is sent as Content-Type.
	ContentType string
	// Header holds the network's own headers, keyed canonically (http.Header.Set); Accept
	// defaults to application/json.
	Header http.Header
	// Bearer, when set, is sent as Authorization: Bearer.
	Bearer string
	// BasicUser and BasicPass, when BasicUser is set, authenticate an OAuth client.
	BasicUser, BasicPass string
	// Create marks the call that creates the post (or the upload's last part that does): once
	// it was sent, a failure leaves the outcome unknown.
	Create bool
}

// Answer is a network's answer, read in full (up to MaxAnswer).
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// OK reports a 2xx status.
func (a *Answer) OK() bool { return a.Status >= 200 && a.Status <= 299 }

// Send makes the call. A call that got no (complete) answer is classified by NoAnswer.
func Send(ctx context.Context, hc *http.Client, p Platform, c Call) (*Answer, error) {
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			wrote.Store(true)
		}
	}}
	var body io.Reader
	if c.Body != nil {
		body = bytes.NewReader(c.Body)
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), c.Method, c.URL, body)
	if err != nil {
		return nil, &Error{Platform: p, Kind: Permanent, Message: "building the request failed", Err: err}
	}
	for k, vs := range c.Header {
		req.Header[k] = vs
	}
	if c.ContentType != "" {
		req.Header.Set("Content-Type", c.ContentType)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if c.Bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.Bearer)
	}
	if c.BasicUser != "" {
		req.SetBasicAuth(c.BasicUser, c.BasicPass)
	}
	if err := Gate(ctx); err != nil {
		return nil, NoAnswer(p, err, false, c.Create)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, NoAnswer(p, err, wrote.Load(), c.Create)
	}
	defer resp.Body.Close()
	b, err := readAnswer(resp)
	if err != nil {
		// The answer started but was cut off: the request certainly arrived.
		return nil, NoAnswer(p, err, true, c.Create)
	}
	return &Answer{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// readAnswer reads an answer's body, up to MaxAnswer. A body of a declared length (most answers
// of the networks' APIs) is read into one buffer of that length rather than grown from 512
// bytes, as io.ReadAll would.
func readAnswer(resp *http.Response) ([]byte, error) {
	n := resp.ContentLength
	if n < 0 || n > MaxAnswer {
		return io.ReadAll(io.LimitReader(resp.Body, MaxAnswer))
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(resp.Body, b); err != nil {
		return nil, err
	}
	return b, nil
}

// NoAnswer classifies a call that got no (complete) answer: Transient when the request was not
// sent; once it was sent, Unknown for the call that creates the post (it may exist) and
// Transient for any other.
func NoAnswer(p Platform, err error, sent, create bool) *Error {
	switch {
	case !sent:
		return &Error{Platform: p, Kind: Transient, Message: "the request could not be sent: " + err.Error(), Err: err}
	case create:
		return &Error{Platform: p, Kind: Unknown, Message: "no answer after the post was sent; it may exist: " + err.Error(), Err: err}
	}
	return &Error{Platform: p, Kind: Transient, Message: "no answer: " + err.Error(), Err: err}
}

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
