package api

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// sseBundle is one stream served by sseWriter on a real HTTP server on loopback: each value sent
// on ready is written as one event; closing ready is a job that dropped its subscriber.
type sseBundle struct {
	url     string
	client  *http.Client
	m       *streamMetrics
	ready   chan []byte
	revoke  context.CancelCauseFunc
	closing chan struct{}
	ended   chan struct{} // closed when the stream's handler is done with it
}

type sseOptions struct {
	hijack    bool
	timeout   time.Duration // each write's deadline (default sseWriteTimeout)
	pingEvery time.Duration // default: an hour, no pings
	linger    time.Duration // how long the handler takes, once the stream ended, before it returns
}

func setupSSE(t *testing.T, o sseOptions) *sseBundle {
	t.Helper()
	held, revoke := context.WithCancelCause(context.Background())
	t.Cleanup(func() { revoke(nil) })
	b := &sseBundle{m: newStreamMetrics(nil), ready: make(chan []byte), revoke: revoke, closing: make(chan struct{}), ended: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(b.ended)
		sseHeaders(w.Header())
		first := commentBytes("hello")
		gone := r.Context().Done()
		var s *sseWriter
		if o.hijack {
			var err error
			if s, err = hijackSSE(w, b.m); err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			defer s.close()
			g, stop := hangups().watch(s.conn)
			defer stop()
			gone = g
		} else {
			w.WriteHeader(http.StatusOK)
			s = newSSE(w, b.m)
			defer s.close()
			defer time.Sleep(o.linger)
		}
		if o.timeout > 0 {
			s.timeout = o.timeout
		}
		s.pingEvery = time.Hour
		if o.pingEvery > 0 {
			s.pingEvery = o.pingEvery
		}
		wrote := false
		if o.hijack {
			wrote = s.writeHead(w.Header(), first)
		} else {
			wrote = s.write(first)
		}
		if !wrote {
			t.Error("the first bytes were not written")
			return
		}
		s.open(gone, held, b.closing)
		for {
			ev, ok, live := sseNext(s, b.ready)
			if !live {
				return
			}
			if !ok {
				s.dropped()
				s.farewell()
				return
			}
			if !s.events(ev, 1) {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	// A transport of the test's own, so that its connections are its alone.
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	b.url, b.client = srv.URL, &http.Client{Transport: tr}
	return b
}

// open opens the stream and reads its first frame, the comment "hello".
func (b *sseBundle) open(t *testing.T) (*http.Response, *bufio.Reader) {
	t.Helper()
	resp, err := b.client.Get(b.url)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := bufio.NewReader(resp.Body)
	require.Equal(t, ": hello", readFrame(t, r))
	return resp, r
}

// readFrame reads one frame (the lines up to a blank line) as the client reads it.
func readFrame(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var lines []string
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err, "a frame ends with a blank line; read so far: %q", lines)
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			return strings.Join(lines, "\n")
		}
		lines = append(lines, line)
	}
}

func (b *sseBundle) waitEnded(t *testing.T) {
	t.Helper()
	select {
	case <-b.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end")
	}
}

func transports(t *testing.T, f func(t *testing.T, hijack bool)) {
	t.Helper()
	for name, hijack := range map[string]bool{"request": false, "hijacked": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, hijack)
		})
	}
}

// Both ways of serving a stream give the same response: the stream's headers, then each event as
// event/id/data, counted, and the open stream in the gauge until it ends.
func TestSSEWriterFrames(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, hijack bool) {
		b := setupSSE(t, sseOptions{hijack: hijack})
		resp, r := b.open(t)
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
		require.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
		require.Equal(t, hijack, resp.Close, "a hijacked stream's body ends with its connection (Connection: close)")

		for i, data := range []map[string]any{{"phase": "queued"}, {"phase": "published", "n": 2}} {
			ev, err := eventBytes("progress", uint64(41+i), data)
			require.NoError(t, err)
			b.ready <- ev
		}
		require.Equal(t, "event: progress\nid: 41\ndata: {\"phase\":\"queued\"}", readFrame(t, r))
		require.Equal(t, "event: progress\nid: 42\ndata: {\"n\":2,\"phase\":\"published\"}", readFrame(t, r))
		require.Eventually(t, func() bool { return testutil.ToFloat64(b.m.sent) == 2 }, 5*time.Second, 5*time.Millisecond)
		require.Equal(t, 1.0, testutil.ToFloat64(b.m.open))

		close(b.closing)
		b.waitEnded(t)
		require.Zero(t, testutil.ToFloat64(b.m.open))
		require.Zero(t, testutil.ToFloat64(b.m.dropped))
	})
}

// An idle stream pings at its cadence, and goes on with its events after; a client that leaves
// ends it, counted as dropped.
func TestSSEWriterPingsWhileIdle(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, hijack bool) {
		b := setupSSE(t, sseOptions{hijack: hijack, pingEvery: 20 * time.Millisecond})
		resp, r := b.open(t)
		require.Equal(t, ": ping", readFrame(t, r))
		require.Equal(t, ": ping", readFrame(t, r))
		ev, err := eventBytes("done", 7, map[string]string{"status": "completed"})
		require.NoError(t, err)
		b.ready <- ev
		// Pings may come before the event is written, never within it.
		for {
			f := readFrame(t, r)
			if f != ": ping" {
				require.Equal(t, "event: done\nid: 7\ndata: {\"status\":\"completed\"}", f)
				break
			}
		}
		require.Zero(t, testutil.ToFloat64(b.m.dropped))

		resp.Body.Close()
		b.waitEnded(t)
		require.Equal(t, 1.0, testutil.ToFloat64(b.m.dropped))
		require.Zero(t, testutil.ToFloat64(b.m.open))
	})
}

// A client that stops reading is cut at the write's deadline instead of holding the stream for
// ever; it is counted as dropped.
func TestSSEWriterDeadlineCutsStalledClient(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, hijack bool) {
		b := setupSSE(t, sseOptions{hijack: hijack, timeout: 100 * time.Millisecond})
		_, _ = b.open(t) // and read nothing more
		ev, err := eventBytes("progress", 1, strings.Repeat("x", 1<<20))
		require.NoError(t, err)
		// The socket buffers take some megabytes; then a write blocks until its deadline.
		sent := 0
	feed:
		for {
			select {
			case b.ready <- ev:
				sent++
			case <-b.ended:
				break feed
			case <-time.After(10 * time.Second):
				t.Fatalf("the stalled client was not cut after %d events", sent)
			}
		}
		require.Equal(t, 1.0, testutil.ToFloat64(b.m.dropped))
		require.Equal(t, float64(sent-1), testutil.ToFloat64(b.m.sent), "the last event was not written")
		require.Zero(t, testutil.ToFloat64(b.m.open))
	})
}

// Each way a stream ends that is not its own is written to the client before it ends, and counted.
func TestSSEWriterEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		end              func(b *sseBundle)
		last             string
		dropped, revoked float64
	}{
		{"shutdown", func(b *sseBundle) { close(b.closing) }, ": the stream ends here; reconnect to follow the job\nretry: 1000", 0, 0},
		{"fell behind", func(b *sseBundle) { close(b.ready) }, ": the stream ends here; reconnect to follow the job\nretry: 1000", 1, 0},
		{"credential revoked", func(b *sseBundle) { b.revoke(errors.New("API key has been revoked")) }, ": API key has been revoked; the stream ends", 0, 1},
		{"session ended", func(b *sseBundle) {
			b.revoke(errors.New("the session has ended (signed out,\nor ended by a password change)"))
		}, ": the session has ended (signed out, or ended by a password change); the stream ends", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			transports(t, func(t *testing.T, hijack bool) {
				b := setupSSE(t, sseOptions{hijack: hijack})
				_, r := b.open(t)
				tc.end(b)
				require.Equal(t, tc.last, readFrame(t, r))
				_, err := r.ReadByte()
				require.ErrorIs(t, err, io.EOF, "the stream ends after it")
				b.waitEnded(t)
				require.Equal(t, tc.dropped, testutil.ToFloat64(b.m.dropped))
				require.Equal(t, tc.revoked, testutil.ToFloat64(b.m.revoked))
				require.Zero(t, testutil.ToFloat64(b.m.open))
				require.Zero(t, testutil.ToFloat64(b.m.sent))
			})
		})
	}
}

// A stream served within its request leaves no write deadline on the connection: the response
// ends, and the next request on the connection is answered, although the handler returned after
// the deadline of the stream's last write.
func TestSSEWriterLeavesNoDeadline(t *testing.T) {
	t.Parallel()
	b := setupSSE(t, sseOptions{timeout: 50 * time.Millisecond, linger: 150 * time.Millisecond})
	var conns []httptrace.GotConnInfo
	get := func() {
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(),
			&httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conns = append(conns, i) }}), http.MethodGet, b.url, nil)
		require.NoError(t, err)
		resp, err := b.client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err, "the response ends")
		require.Equal(t, ": hello\n\n: API key has been revoked; the stream ends\n\n", string(body))
	}
	// Each stream ends at once, after two writes.
	b.revoke(errors.New("API key has been revoked"))
	get()
	b.waitEnded(t)
	b.ended = make(chan struct{})
	get()
	require.Len(t, conns, 2, "one connection per request, no retry")
	require.True(t, conns[1].Reused, "the second request went on the first's connection")
}
