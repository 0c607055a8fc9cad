package platforms_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// Send puts every part of a Call on the wire: method, body, Content-Type, the network's headers,
// the bearer or Basic credentials, and Accept unless the network's headers chose one.
func TestSendWritesTheCall(t *testing.T) {
	t.Parallel()
	got := make(chan *http.Request, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Clone(context.Background())
		w.Header().Set("X-Answer", "yes")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	hc := &http.Client{}
	ans, err := platforms.Send(context.Background(), hc, platforms.X, platforms.Call{Method: http.MethodPost, URL: srv.URL + "/p",
		Body: []byte("a=b"), ContentType: "application/x-www-form-urlencoded", Bearer: "tok",
		Header: http.Header{"Content-Range": {"bytes 0-2/3"}}})
	require.NoError(t, err)
	require.True(t, ans.OK())
	require.Equal(t, http.StatusCreated, ans.Status)
	require.Equal(t, "yes", ans.Header.Get("X-Answer"))
	require.JSONEq(t, `{"ok":true}`, string(ans.Body))
	r := <-got
	require.Equal(t, http.MethodPost, r.Method)
	require.Equal(t, "application/x-www-form-urlencoded", r.Header.Get("Content-Type"))
	require.Equal(t, "bytes 0-2/3", r.Header.Get("Content-Range"))
	require.Equal(t, "Bearer tok", r.Header.Get("Authorization"))
	require.Equal(t, "application/json", r.Header.Get("Accept"))

	_, err = platforms.Send(context.Background(), hc, platforms.X, platforms.Call{Method: http.MethodGet, URL: srv.URL + "/q",
		BasicUser: "id", BasicPass: "secret", Header: http.Header{"Accept": {"text/plain"}}})
	require.NoError(t, err)
	r = <-got
	user, pass, ok := r.BasicAuth()
	require.True(t, ok)
	require.Equal(t, "id:secret", user+":"+pass)
	require.Equal(t, "text/plain", r.Header.Get("Accept"))
	require.Empty(t, r.Header.Get("Content-Type"))
}

// An answer is read up to MaxAnswer and no further.
func TestSendBoundsTheAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("a", platforms.MaxAnswer+10)))
	}))
	t.Cleanup(srv.Close)
	ans, err := platforms.Send(context.Background(), &http.Client{}, platforms.X, platforms.Call{Method: http.MethodGet, URL: srv.URL})
	require.NoError(t, err)
	require.Len(t, ans.Body, platforms.MaxAnswer)
}

// A call that could not be sent is Transient whatever it was for.
func TestSendRefusedConnectionIsTransient(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = platforms.Send(context.Background(), &http.Client{}, platforms.X, platforms.Call{Method: http.MethodPost, URL: "http://" + addr, Create: true})
	require.Equal(t, platforms.Transient, platforms.KindOf(err))
}

// An answer of a declared length is read whole, over one connection kept for the next call; one
// declared longer than MaxAnswer is cut at MaxAnswer; one cut off before its declared length is a
// call without an answer (Unknown for the call that creates the post).
func TestSendReadsDeclaredLengths(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/long":
			w.Header().Set("Content-Length", strconv.Itoa(platforms.MaxAnswer+10))
			_, _ = w.Write([]byte(strings.Repeat("b", platforms.MaxAnswer+10)))
		case "/cut":
			conn, bw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			_, _ = bw.WriteString("HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{\"data\":")
			_ = bw.Flush()
			_ = conn.Close()
		default:
			body := `{"data":{"id":"` + r.URL.Path + `"}}`
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write([]byte(body))
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	hc := platforms.DefaultHTTPClient()
	for _, path := range []string{"/1", "/2", "/3"} {
		ans, err := platforms.Send(context.Background(), hc, platforms.X, platforms.Call{Method: http.MethodPost, URL: srv.URL + path, Body: []byte(`{}`), Create: true})
		require.NoError(t, err)
		require.JSONEq(t, `{"data":{"id":"`+path+`"}}`, string(ans.Body))
	}
	require.Equal(t, int32(1), conns.Load(), "the three calls share one connection")

	ans, err := platforms.Send(context.Background(), hc, platforms.X, platforms.Call{Method: http.MethodGet, URL: srv.URL + "/long"})
	require.NoError(t, err)
	require.Len(t, ans.Body, platforms.MaxAnswer)

	_, err = platforms.Send(context.Background(), hc, platforms.X, platforms.Call{Method: http.MethodPost, URL: srv.URL + "/cut", Body: []byte(`{}`), Create: true})
	require.Equal(t, platforms.Unknown, platforms.KindOf(err), "%v", err)
}

// A gate in the context (platforms.WithGate) is asked before each request: while it lets
// requests through they are sent; once it answers an error nothing reaches the network, and the
// call is a request that could not be sent (Transient, never Unknown, even for the call that
// creates the post), whose error wraps the gate's.
func TestSendAsksTheGateBeforeEachRequest(t *testing.T) {
	t.Parallel()
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	closed := errors.New("gate closed")
	var open atomic.Bool
	open.Store(true)
	ctx := platforms.WithGate(context.Background(), func() error {
		if !open.Load() {
			return closed
		}
		return nil
	})
	_, err := platforms.Send(ctx, &http.Client{}, platforms.X, platforms.Call{Method: "POST", URL: srv.URL + "/upload"})
	require.NoError(t, err)
	open.Store(false)
	_, err = platforms.Send(ctx, &http.Client{}, platforms.X, platforms.Call{Method: "POST", URL: srv.URL + "/create", Create: true})
	require.ErrorIs(t, err, closed)
	require.Equal(t, platforms.Transient, platforms.KindOf(err))
	require.EqualValues(t, 1, got.Load(), "the request after the gate closed was not sent")
	require.NoError(t, platforms.Gate(context.Background()), "no gate: every request goes")
}
