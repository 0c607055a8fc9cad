package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/heraldhq/herald/http/auth"
	"github.com/heraldhq/herald/http/server"
)

// API is the /v1 API as the tools see it: one request, its answer. Both implementations speak
// the same HTTP contract (the OpenAPI document), so the tools are written once.
type API interface {
	// Do sends a /v1 request (path with its query) and returns the answer; err is a failure to
	// get one, never an HTTP error status.
	Do(ctx context.Context, req Request) (*Response, error)
	// Put streams size bytes of body to a presigned upload URL (POST /v1/media/presign's
	// upload_url); nothing of it is held in memory but what is being copied.
	Put(ctx context.Context, uploadURL, contentType string, body io.Reader, size int64) (*Response, error)
}

// Request is one /v1 request.
type Request struct {
	Method, Path string
	Body         any // marshalled to JSON when not nil
	Header       http.Header
}

// Response is an answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// maxAnswer caps an answer the tools read (the largest /v1 answers are pages of 100 posts).
const maxAnswer = 8 << 20

type principalKey struct{}

// withPrincipal is the context of a tool call on the caller's behalf (InProcess reads it).
func withPrincipal(ctx context.Context, p *auth.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// InProcess calls Herald's own Echo instance: the request runs the /v1 route's middleware (the
// principal comes from the context instead of a header: server.WithPrincipal; the plan's quota
// counts it) and handler, exactly as a program's request would.
type InProcess struct {
	Handler http.Handler
	// BaseURL returns the public base URL: upload URLs below it are Herald's own (the local media
	// backend) and are handed to Handler too; others (S3) are sent over the network.
	BaseURL func() string
	// Client sends uploads to other hosts (default a client with a 5 minute timeout).
	Client *http.Client
}

var _ API = (*InProcess)(nil)

// Do implements API.
func (a *InProcess) Do(ctx context.Context, r Request) (*Response, error) {
	p, _ := ctx.Value(principalKey{}).(*auth.Principal)
	if p == nil {
		return nil, fmt.Errorf("connector: no principal for an in-process call")
	}
	body, err := encode(r.Body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(server.WithPrincipal(ctx, p), r.Method, r.Path, body)
	if err != nil {
		return nil, err
	}
	req.RemoteAddr = "127.0.0.1:0"
	copyHeader(req, r)
	if w := askedWorkspace(ctx); w != "" && req.Header.Get(server.WorkspaceHeader) == "" {
		req.Header.Set(server.WorkspaceHeader, w)
	}
	return a.serve(req), nil
}

// Put implements API.
func (a *InProcess) Put(ctx context.Context, uploadURL, contentType string, body io.Reader, size int64) (*Response, error) {
	base := strings.TrimRight(a.BaseURL(), "/")
	if rest, ok := strings.CutPrefix(uploadURL, base+"/"); ok {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, "/"+rest, io.NopCloser(body))
		if err != nil {
			return nil, err
		}
		req.ContentLength = size
		req.RemoteAddr = "127.0.0.1:0"
		req.Header.Set("Content-Type", contentType)
		return a.serve(req), nil
	}
	c := a.Client
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Minute}
	}
	return put(ctx, c, uploadURL, contentType, body, size)
}

func (a *InProcess) serve(req *http.Request) *Response {
	rec := httptest.NewRecorder()
	a.Handler.ServeHTTP(rec, req)
	return &Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// Remote calls a Herald server over HTTP with an API key (`herald mcp`).
type Remote struct {
	BaseURL string // e.g. http://127.0.0.1:8080
	Key     string
	// Workspace, when set, names the workspace every request acts in (the Herald-Workspace
	// header); else the key's own workspace, else main.
	Workspace string
	Client    *http.Client
}

var _ API = (*Remote)(nil)

// Do implements API.
func (a *Remote) Do(ctx context.Context, r Request) (*Response, error) {
	body, err := encode(r.Body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, strings.TrimRight(a.BaseURL, "/")+r.Path, body)
	if err != nil {
		return nil, err
	}
	copyHeader(req, r)
	if a.Workspace != "" && req.Header.Get(server.WorkspaceHeader) == "" {
		req.Header.Set(server.WorkspaceHeader, a.Workspace)
	}
	req.Header.Set("Authorization", "Bearer "+a.Key)
	req.Header.Set("User-Agent", "herald-mcp")
	return send(a.client(), req)
}

// Put implements API.
func (a *Remote) Put(ctx context.Context, uploadURL, contentType string, body io.Reader, size int64) (*Response, error) {
	return put(ctx, a.client(), uploadURL, contentType, body, size)
}

func (a *Remote) client() *http.Client {
	if a.Client != nil {
		return a.Client
	}
	return http.DefaultClient
}

func put(ctx context.Context, c *http.Client, uploadURL, contentType string, body io.Reader, size int64) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, uploadURL, io.NopCloser(body))
	if err != nil {
		return nil, err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", contentType)
	return send(c, req)
}

func send(c *http.Client, req *http.Request) (*Response, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, err
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

func encode(v any) (io.Reader, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}

func copyHeader(req *http.Request, r Request) {
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
}

// principalOf is the principal withPrincipal set (nil over stdio).
func principalOf(ctx context.Context) *auth.Principal {
	p, _ := ctx.Value(principalKey{}).(*auth.Principal)
	return p
}
