package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Scopes on /mcp. A token sees and calls the tools its grant's scopes cover: tools/list leaves
// the others out, and a tools/call of one of them is refused at the HTTP door with 403 and an
// insufficient_scope challenge (RFC 6750 3.1, MCP authorization "Scope Challenge Handling"),
// which a host answers by asking the user for the wider grant (step-up authorization). An API
// key holds every scope and sees everything.

// codeForbidden is the JSON-RPC error code of a refusal at the door (a disallowed Origin, a
// call outside the token's scopes): in the range JSON-RPC leaves to servers.
const codeForbidden = -32003

// maxCallBody bounds what the scope check reads of a request, as the SDK does after it.
const maxCallBody = mcp.DefaultMaxRequestBodyBytes

// writeJSONRPCError answers a JSON-RPC error response with an HTTP status: the transport's
// clients read it as the request's error and keep their session (an id of nil answers no
// request in particular).
func writeJSONRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string, data any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(rpcError(id, code, msg, data))
}

type rpcErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

type rpcErrorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcErrorBody    `json:"error"`
}

func rpcError(id json.RawMessage, code int, msg string, data any) rpcErrorResponse {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return rpcErrorResponse{JSONRPC: "2.0", ID: id, Error: rpcErrorBody{Code: code, Message: msg, Data: data}}
}

// toolScopes maps each tool to the scope it needs.
func toolScopes(t *Tools) map[string]string {
	m := map[string]string{}
	for _, ts := range t.Scopes() {
		m[ts.Tool] = ts.Scope
	}
	return m
}

// grantIn is the grant the bearer check put in ctx (nil over stdio and in-memory transports).
func grantIn(ctx context.Context) *Grant {
	info := sdkauth.TokenInfoFromContext(ctx)
	if info == nil {
		return nil
	}
	g, _ := info.Extra[grantKey].(*Grant)
	return g
}

// coversAll reports whether g holds every one of scopes.
func coversAll(g *Grant, scopes []string) bool {
	for _, s := range scopes {
		if !g.Has(s) {
			return false
		}
	}
	return true
}

// distinct is the scopes the tools need, each once.
func distinct(scopes map[string]string) []string {
	var out []string
	for _, s := range scopes {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// rpcCall is what the scope check reads of a JSON-RPC message.
type rpcCall struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// requireToolScopes refuses, before the SDK's handler, a POST whose tools/call names a tool the
// verified grant does not cover: 403 with the insufficient_scope challenge, and the JSON-RPC
// error of the call as the body. The body it read is handed on unchanged. A grant that covers
// every tool (an API key, a token with both scopes) is not read at all.
func requireToolScopes(scopes map[string]string, base func() string, refused func(string), next http.Handler) http.Handler {
	needed := distinct(scopes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := grantIn(r.Context())
		if g == nil || r.Method != http.MethodPost || r.Body == nil || coversAll(g, needed) {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCallBody))
		// The SDK reads the same bytes and meets the same error, which it answers itself.
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		var calls []rpcCall
		batch := len(bytes.TrimSpace(body)) > 0 && bytes.TrimSpace(body)[0] == '['
		if batch {
			_ = json.Unmarshal(body, &calls)
		} else {
			var c rpcCall
			if json.Unmarshal(body, &c) == nil {
				calls = []rpcCall{c}
			}
		}
		// A body that does not parse is the SDK's to refuse.
		var denied []rpcErrorResponse
		need := map[string]bool{}
		for _, c := range calls {
			scope, known := scopes[c.Params.Name]
			if c.Method != "tools/call" || !known || g.Has(scope) {
				continue
			}
			need[scope] = true
			denied = append(denied, rpcError(c.ID, codeForbidden,
				fmt.Sprintf("%s needs the scope %s, which this token was not granted", c.Params.Name, scope),
				map[string]string{"required_scope": scope}))
		}
		if len(denied) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		refused("insufficient_scope")
		w.Header().Set("WWW-Authenticate", insufficientScope(base(), g, need, denied[0].Error.Message))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		if batch {
			_ = json.NewEncoder(w).Encode(denied)
		} else {
			_ = json.NewEncoder(w).Encode(denied[0])
		}
	})
}

// insufficientScope is the 403's challenge. Its scope names the scopes the grant already holds
// as well as the missing ones (the MCP authorization spec's recommended approach): a host asks
// for exactly these, so the new token loses nothing the old one had.
func insufficientScope(base string, g *Grant, need map[string]bool, desc string) string {
	var scopes []string
	for _, s := range AllScopes {
		if need[s] || g.Has(s) {
			scopes = append(scopes, s)
		}
	}
	return fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q, error_description=%q`,
		strings.Join(scopes, " "), resourceMetadata(base), desc)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// serverMiddleware is the receiving middleware of the shared MCP server for requests over HTTP:
//   - tools/list leaves out the tools the request's grant does not cover (the result is built
//     per request; the server's tool set is never changed), and marks the list private to the
//     caller (the cache scope of the 2026-07-28 protocol);
//   - subscriptions/listen is not granted tool list notifications: the tool set never changes,
//     and a stateless server has no stream to send a change on (initialize and server/discover
//     advertise no listChanged: the server's own capabilities say so, NewTools).
func serverMiddleware(scopes map[string]string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if l, ok := req.(*mcp.SubscriptionsListenRequest); ok && l.Params != nil && l.Params.Notifications != nil {
				n := *l.Params.Notifications
				n.ToolsListChanged = false
				l.Params.Notifications = &n
			}
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			if r, ok := res.(*mcp.ListToolsResult); ok {
				var g *Grant
				if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
					g, _ = extra.TokenInfo.Extra[grantKey].(*Grant)
				}
				if g != nil {
					r.CacheScope = "private"
					r.Tools = slices.DeleteFunc(slices.Clone(r.Tools), func(t *mcp.Tool) bool {
						scope, known := scopes[t.Name]
						return known && !g.Has(scope)
					})
				}
			}
			return res, nil
		}
	}
}
