package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// This file is the outside client of the shutdown and crash tests (shutdown_test.go,
// chaos_test.go): it classifies every answer the way a careful client of Herald must.
//
// The rule for a request that meets a server going down:
//   - a 2xx is durable: what it acknowledged is there after any restart;
//   - a 503 internal_error with Retry-After, or a connection refused, was refused before anything
//     was written: retrying it is safe. A refused connection proves it only if the request was
//     never written before: Go's transport resends a request that carries an Idempotency-Key by
//     itself when the connection it was written to dies, and reports the last attempt's error;
//     so a request written once (httptrace's WroteRequest) is lost, not refused;
//   - any other transport failure (a reset, an EOF, a timeout) may have come after Herald
//     committed the request: its outcome is unknown. A publish is settled by sending it again with
//     the same Idempotency-Key (Herald answers the stored 202 if the first one committed, else
//     publishes it now), a create by listing the posts with its content (search=): it is there at
//     most once.

// outcome is what a client can conclude from one answer.
type outcome int

const (
	acked    outcome = iota // a 2xx: durable
	refused                 // 503 with Retry-After, or connection refused: nothing written
	lost                    // the answer did not come back: the request may or may not have committed
	rejected                // any other answer
)

func (o outcome) String() string {
	return [...]string{"acked", "refused", "lost", "rejected"}[o]
}

// loadResult is one request's answer.
type loadResult struct {
	outcome outcome
	status  int
	body    []byte
	err     error
}

func (r loadResult) String() string {
	if r.err != nil {
		return fmt.Sprintf("%s: %v", r.outcome, r.err)
	}
	return fmt.Sprintf("%s: %d %s", r.outcome, r.status, r.body)
}

// loadClient calls one Herald (base URL, API key) over keep-alive connections, as a busy client
// does.
type loadClient struct {
	hc   *http.Client
	base string
	key  string
}

func newLoadClient(base, key string) *loadClient {
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	return &loadClient{hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}, base: base, key: key}
}

// classify turns an answer (or a transport error) into an outcome.
func classify(status int, hdr http.Header, body []byte, err error) outcome {
	switch {
	case err != nil && errors.Is(err, syscall.ECONNREFUSED):
		return refused
	case err != nil:
		return lost
	case status >= 200 && status < 300:
		return acked
	case status == http.StatusServiceUnavailable:
		var e struct{ Error struct{ Code string } }
		if json.Unmarshal(body, &e) == nil && e.Error.Code == "internal_error" && hdr.Get("Retry-After") != "" {
			return refused
		}
	}
	return rejected
}

func (c *loadClient) do(method, path, body string, hdr map[string]string) loadResult {
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		return loadResult{outcome: rejected, err: err}
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	var wrote atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) },
	}))
	resp, err := c.hc.Do(req)
	if err != nil {
		o := classify(0, nil, nil, err)
		if o == refused && wrote.Load() {
			o = lost // an earlier attempt of the transport's was written
		}
		return loadResult{outcome: o, err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		// The head came but the body was cut: nothing says the request did not commit.
		return loadResult{outcome: lost, status: resp.StatusCode, err: err}
	}
	return loadResult{outcome: classify(resp.StatusCode, resp.Header, b, nil), status: resp.StatusCode, body: b}
}

// must calls and requires a 2xx (the settling calls after a restart).
func (c *loadClient) must(t *testing.T, method, path, body string) []byte {
	t.Helper()
	r := c.do(method, path, body, nil)
	require.Equal(t, acked, r.outcome, "%s %s: %s", method, path, r)
	return r.body
}

// postsWith lists the ids of the posts whose content contains s.
func (c *loadClient) postsWith(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	for page := 1; ; page++ {
		var l struct {
			Data []struct {
				ID      string `json:"id"`
				Content string `json:"content"`
			}
			Pagination struct {
				TotalPages int `json:"total_pages"`
			}
		}
		require.NoError(t, json.Unmarshal(c.must(t, "GET", fmt.Sprintf("/v1/posts?limit=100&page=%d&search=%s", page, url.QueryEscape(s)), ""), &l))
		for _, p := range l.Data {
			if p.Content == s {
				out = append(out, p.ID)
			}
		}
		if page >= l.Pagination.TotalPages {
			return out
		}
	}
}

// sandboxAccounts maps each network to the sandbox's account on it.
func (c *loadClient) sandboxAccounts(t *testing.T) map[string]string {
	t.Helper()
	var accts struct {
		Data []struct{ ID, Platform string }
	}
	require.NoError(t, json.Unmarshal(c.must(t, "GET", "/v1/accounts", ""), &accts))
	out := map[string]string{}
	for _, a := range accts.Data {
		out[a.Platform] = a.ID
	}
	require.Len(t, out, 9, "one sandbox account on each network")
	return out
}

// streamResult is how a job stream went.
type streamResult struct {
	status int
	events []string // event names, in order
	// done says the stream's last event was done; retry that the server sent a retry: field
	// (its way of asking the client to come back), clean that the body ended after a complete
	// event or comment, not in the middle of one.
	done, retry, clean bool
	lastID             string
	err                error
}

// stream follows a job's stream to its end, as a plain SSE client reads it.
func (c *loadClient) stream(ctx context.Context, jobID string) streamResult {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/v1/jobs/"+jobID+"/stream", nil)
	if err != nil {
		return streamResult{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "text/event-stream")
	hc := &http.Client{Transport: c.hc.Transport} // no overall timeout: the stream lasts the job
	resp, err := hc.Do(req)
	if err != nil {
		return streamResult{err: err}
	}
	defer resp.Body.Close()
	r := streamResult{status: resp.StatusCode}
	if resp.StatusCode != 200 {
		_, _ = io.Copy(io.Discard, resp.Body)
		return r
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	name, partial := "", false
	r.clean = true
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if name != "" {
				r.events = append(r.events, name)
				r.done = name == "done"
			}
			name, partial = "", false
		case strings.HasPrefix(line, ":"):
			partial = true
		case strings.HasPrefix(line, "retry:"):
			r.retry, partial = true, true
		case strings.HasPrefix(line, "event:"):
			name, partial = strings.TrimSpace(strings.TrimPrefix(line, "event:")), true
		case strings.HasPrefix(line, "id:"):
			r.lastID, partial = strings.TrimSpace(strings.TrimPrefix(line, "id:")), true
		default:
			partial = true
		}
	}
	r.err = sc.Err()
	r.clean = r.err == nil && !partial
	return r
}
