package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/server"
)

// pathServer is a Herald server on loopback with one route that echoes its two path parameters,
// and counts the requests that reached the handler.
func pathServer(t *testing.T) (*server.Server, *httptest.Server, *atomic.Int64) {
	t.Helper()
	srv := server.New(server.Config{})
	var reached atomic.Int64
	srv.Echo.POST("/v1/things/:id/replies/:replyId", func(c *echo.Context) error {
		reached.Add(1)
		return c.JSON(http.StatusOK, map[string]string{"id": c.Param("id"), "reply_id": c.Param("replyId")})
	})
	hs := httptest.NewServer(srv.Echo)
	t.Cleanup(hs.Close)
	return srv, hs, &reached
}

type pathAnswer struct {
	status int
	id     string
	code   string
	msg    string
}

func readAnswer(t *testing.T, resp *http.Response) pathAnswer {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m struct {
		ID    string `json:"id"`
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal(body, &m), "%s", body)
	return pathAnswer{status: resp.StatusCode, id: m.ID, code: m.Error.Code, msg: m.Error.Message}
}

// rawRequest sends a request line exactly as written, as a client that encodes its own URL does.
func rawRequest(t *testing.T, hs *httptest.Server, target string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: herald\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", target)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	return resp
}

func TestPathParametersAreDecodedOnce(t *testing.T) { //nolint:tparallel // the count of requests that reached the handler is checked after every case
	t.Parallel()
	_, hs, reached := pathServer(t)
	bsky := "at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/app.bsky.feed.post/3lbzkq2n7o22a"
	tests := []struct {
		name, sent, want string
	}{
		{"Bluesky at:// URI, every reserved character encoded", url.PathEscape(bsky), bsky},
		{"Bluesky at:// URI, colons left as they are", strings.ReplaceAll(bsky, "/", "%2F"), bsky},
		{"a literal %25 is % once", "100%25", "100%"},
		{"%2541 is %41, not A", "a%2541", "a%41"},
		{"%2525 is %25", "%2525", "%25"},
		{"an encoded UUID", "%30%31%39%33%61%62%63%64-0000-7000-8000-000000000000", "0193abcd-0000-7000-8000-000000000000"},
		{"a plain id", "1850283745612345678", "1850283745612345678"},
		{"a space", "a%20b", "a b"},
		{"a plus stays a plus", "a+b", "a+b"},
		{"UTF-8", "caf%C3%A9", "café"},
		{"512 bytes", strings.Repeat("x", 512), strings.Repeat("x", 512)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Through net/http's client (it sends a valid encoding as it is given)...
			resp, err := http.Post(hs.URL+"/v1/things/"+tc.sent+"/replies/r1", "application/json", nil)
			require.NoError(t, err)
			a := readAnswer(t, resp)
			require.Equal(t, http.StatusOK, a.status, a.msg)
			require.Equal(t, tc.want, a.id)
			// ...and as a raw request line.
			a = readAnswer(t, rawRequest(t, hs, "/v1/things/"+tc.sent+"/replies/r1"))
			require.Equal(t, http.StatusOK, a.status, a.msg)
			require.Equal(t, tc.want, a.id)
		})
	}
	require.Equal(t, int64(2*len(tests)), reached.Load())
}

func TestBadPathParametersAreRefused(t *testing.T) {
	t.Parallel()
	srv, hs, reached := pathServer(t)
	for _, tc := range []struct {
		name, sent, msg string
	}{
		{"NUL", "abc%00def", "id: contains a control character"},
		{"line break", "abc%0D%0Adef", "id: contains a control character"},
		{"DEL", "abc%7F", "id: contains a control character"},
		{"not UTF-8", "%FF%FE", "id: not valid UTF-8"},
		{"513 bytes", strings.Repeat("x", 513), "id: too long (at most 512 bytes"},
		{"513 bytes once decoded", strings.Repeat("%41", 513), "id: too long (at most 512 bytes"},
	} {
		a := readAnswer(t, rawRequest(t, hs, "/v1/things/"+tc.sent+"/replies/r1"))
		require.Equal(t, http.StatusBadRequest, a.status, tc.name)
		require.Equal(t, "validation_error", a.code, tc.name)
		require.Contains(t, a.msg, tc.msg, tc.name)
	}
	// The second parameter is checked as well.
	a := readAnswer(t, rawRequest(t, hs, "/v1/things/ok/replies/%00"))
	require.Equal(t, "validation_error", a.code)
	require.Contains(t, a.msg, "replyId: contains a control character")

	// Invalid percent-encoding: Go's server refuses the request line itself, before Herald...
	resp := rawRequest(t, hs, "/v1/things/%zz/replies/r1")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	_ = resp.Body.Close()
	// ...and a request that reaches Herald with one (built in process, or by a front end that
	// passes the raw path on) is a validation_error.
	for _, raw := range []string{"/v1/things/%zz/replies/r1", "/v1/things/abc%2/replies/r1", "/v1/things/ok/replies/%"} {
		req := httptest.NewRequest(http.MethodPost, "/v1/things/x/replies/r1", nil)
		req.URL.RawPath = raw
		rec := httptest.NewRecorder()
		srv.Echo.ServeHTTP(rec, req)
		a := readAnswer(t, rec.Result())
		require.Equal(t, http.StatusBadRequest, a.status, raw)
		require.Equal(t, "validation_error", a.code, raw)
		require.Contains(t, a.msg, "invalid percent-encoding in the path", raw)
	}
	require.Zero(t, reached.Load(), "no refused request reached its handler")
}
