package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/server"
	"github.com/heraldhq/herald/internal/testkit"
)

// admissionServer is a server with one write slot and one write route, whose handler tells
// when it runs and waits for its release, and one read route that answers at once.
type admissionServer struct {
	reg     *prometheus.Registry
	hs      *httptest.Server
	entered chan string // the body of each request the write handler runs
	release chan struct{}
	log     syncBuffer
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func newAdmissionServer(t *testing.T) *admissionServer {
	t.Helper()
	reg := prometheus.NewRegistry()
	a := &admissionServer{reg: reg, entered: make(chan string, 16), release: make(chan struct{})}
	log := slog.New(slog.NewTextHandler(&a.log, nil))
	srv := server.New(server.Config{Registry: reg, Log: log, Overload: server.Overload{MaxInflightWrites: 1, AdmissionWait: 5 * time.Millisecond}})
	srv.Echo.POST("/v1/things", func(c *echo.Context) error {
		b, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		a.entered <- string(b)
		<-a.release
		return c.JSON(http.StatusCreated, map[string]string{"body": string(b)})
	}, srv.AdmitWrite)
	srv.Echo.GET("/v1/things", func(c *echo.Context) error { return c.JSON(http.StatusOK, map[string]string{}) })
	a.hs = httptest.NewServer(srv.Echo)
	t.Cleanup(a.hs.Close)
	return a
}

func (a *admissionServer) post(body io.Reader) (*http.Response, error) {
	return http.Post(a.hs.URL+"/v1/things", "application/json", body)
}

// With the one write slot taken, a write waits its short while and is refused with 503,
// internal_error and Retry-After, without its handler running; a read is served meanwhile; once
// the slot is free, writes go through again. The refusal is counted by route template and reason.
func TestAdmitWriteRefusesBeyondItsSlots(t *testing.T) {
	t.Parallel()
	a := newAdmissionServer(t)
	first := make(chan *http.Response, 1)
	go func() {
		resp, err := a.post(strings.NewReader(`{"n":1}`))
		assert.NoError(t, err)
		first <- resp
	}()
	require.Equal(t, `{"n":1}`, <-a.entered)

	resp, err := a.post(strings.NewReader(`{"n":2}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	var e struct{ Error struct{ Code string } }
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, "internal_error", e.Error.Code)
	require.Empty(t, a.entered, "the refused request reached its handler")
	require.Equal(t, 1.0, gathered(t, a.reg, "herald_http_overload_refused_total", "route", "/v1/things", "reason", server.OverloadAdmission))

	// A second refusal: the log sums refusals up in one warning a minute, not one line each.
	again, err := a.post(strings.NewReader(`{"n":2}`))
	require.NoError(t, err)
	again.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, again.StatusCode)
	require.Equal(t, 1, strings.Count(a.log.String(), "refusing requests: the server is over capacity"), a.log.String())
	require.NotContains(t, a.log.String(), "request failed")

	read, err := http.Get(a.hs.URL + "/v1/things")
	require.NoError(t, err)
	read.Body.Close()
	require.Equal(t, http.StatusOK, read.StatusCode, "a read waits for no write slot")

	close(a.release)
	r1 := <-first
	r1.Body.Close()
	require.Equal(t, http.StatusCreated, r1.StatusCode)
	r3, err := a.post(strings.NewReader(`{"n":3}`))
	require.NoError(t, err)
	r3.Body.Close()
	require.Equal(t, http.StatusCreated, r3.StatusCode)
	require.Equal(t, `{"n":3}`, <-a.entered)
}

// A client that sends its body slowly holds no write slot while it sends: another write is
// served meanwhile, and the slow one is served, whole, once its body has arrived.
func TestAdmitWriteReadsTheBodyBeforeTakingASlot(t *testing.T) {
	t.Parallel()
	a := newAdmissionServer(t)
	close(a.release) // handlers answer at once
	pr, pw := io.Pipe()
	slow := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, a.hs.URL+"/v1/things", pr)
		resp, err := http.DefaultClient.Do(req)
		assert.NoError(t, err)
		slow <- resp
	}()
	_, err := pw.Write([]byte(`{"slow":`))
	require.NoError(t, err)
	// The slow request is inside the server, reading its body.
	require.Eventually(t, func() bool { return gathered(t, a.reg, "herald_http_requests_in_flight") == 1 }, 10*time.Second, time.Millisecond)

	resp, err := a.post(strings.NewReader(`{"fast":1}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode, "a slow body took the only write slot")
	require.Equal(t, `{"fast":1}`, <-a.entered)

	_, err = pw.Write([]byte(`true}`))
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	r := <-slow
	r.Body.Close()
	require.Equal(t, http.StatusCreated, r.StatusCode)
	require.Equal(t, `{"slow":true}`, <-a.entered)
}

// gathered is the value of the series of a counter or gauge with the given label pairs.
func gathered(t *testing.T, reg *prometheus.Registry, name string, labelPairs ...string) float64 {
	t.Helper()
	return testkit.Gathered(t, reg, name, labelPairs...)
}
