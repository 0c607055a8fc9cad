package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The job stream (stream.go) and the campaign stream (campaignstream.go) write Server-Sent Events
// through one writer, sseWriter, so that their wire form, the deadline of each write, the pings
// of an idle stream, the ways a stream ends and the herald_sse_* metrics are the same in both:
// each stream only says what its events are and when it is done.

// PingInterval is how often an idle stream sends a comment, so that proxies keep it open.
var PingInterval = 15 * time.Second

// sseWriteTimeout bounds each write of a stream: a client that has read nothing for this long is
// cut, rather than holding the stream's goroutine and connection.
const sseWriteTimeout = 10 * time.Second

// sseFarewellTimeout bounds the farewell's write: at shutdown, or after the client fell behind, a
// client that does not read gets a second at most.
const sseFarewellTimeout = time.Second

// farewell ends a stream that Herald lets go before its job is done: at shutdown, or when the
// client fell too far behind (streams.go).
var farewell = []byte(": the stream ends here; reconnect to follow the job\nretry: 1000\n\n")

var pingBytes = []byte(": ping\n\n")

// streamMetrics count the open streams.
type streamMetrics struct {
	open    prometheus.Gauge
	sent    prometheus.Counter
	dropped prometheus.Counter
	revoked prometheus.Counter
}

func newStreamMetrics(reg prometheus.Registerer) *streamMetrics {
	m := &streamMetrics{
		open:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_sse_subscribers", Help: "Open job and campaign streams."}),
		sent:    prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_sse_events_total", Help: "Events written to job and campaign streams."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_sse_dropped_total", Help: "Job and campaign streams ended because the client went away or fell behind."}),
		revoked: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_sse_revoked_total", Help: "Job and campaign streams ended because the key that opened them was revoked, regenerated or expired, or the dashboard session that opened them ended."}),
	}
	if reg != nil {
		reg.MustRegister(m.open, m.sent, m.dropped, m.revoked)
	}
	return m
}

// sseHeaders sets a stream's response headers: no cache, and no buffering by a proxy in front
// (X-Accel-Buffering), so that each event reaches the client when it is written.
func sseHeaders(hdr http.Header) {
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
}

// eventBytes renders one event in the stream's wire form.
func eventBytes(name string, id uint64, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(b) + 48)
	buf.WriteString("event: " + name + "\nid: " + strconv.FormatUint(id, 10) + "\ndata: ")
	buf.Write(b)
	buf.WriteString("\n\n")
	return buf.Bytes(), nil
}

// commentBytes renders a comment: clients ignore it, a person reading the stream sees it.
func commentBytes(text string) []byte {
	return []byte(": " + strings.ReplaceAll(text, "\n", " ") + "\n\n")
}

// endedBytes is the comment a stream ends with when its credential stops working: clients ignore
// comments, a person reading the stream sees why it ended, and a client that reconnects gets the
// 401 that says so.
func endedBytes(held context.Context) []byte {
	reason := "the credential no longer authenticates"
	if cause := context.Cause(held); cause != nil {
		reason = cause.Error()
	}
	return commentBytes(reason + "; the stream ends")
}

// sseWriter writes one stream: within its request (newSSE), or on a connection taken over from
// the HTTP server (hijackSSE). Every write has its own deadline. Once open, the stream pings while
// idle (sseNext) and ends with the first of its client going away, its credential ending and the
// shutdown, each written and counted here.
type sseWriter struct {
	out      io.Writer
	deadline func(time.Time) error
	flush    func() error // nil: nothing to flush
	conn     net.Conn     // a hijacked stream's connection, closed with the stream
	m        *streamMetrics
	// timeout bounds each write; pingEvery is the pings' cadence (sseWriteTimeout and
	// PingInterval; tests shorten them).
	timeout, pingEvery time.Duration

	// Set by open.
	ping    *time.Ticker
	gone    <-chan struct{}
	held    context.Context
	closing <-chan struct{}
}

// newSSE writes a stream within its request, whose headers are written already.
func newSSE(w http.ResponseWriter, m *streamMetrics) *sseWriter {
	rc := http.NewResponseController(w)
	return &sseWriter{out: w, deadline: rc.SetWriteDeadline, flush: rc.Flush, m: m, timeout: sseWriteTimeout, pingEvery: PingInterval}
}

// hijackSSE takes the response's connection over from the HTTP server, so that an open stream
// costs a few kilobytes and not a request's whole stack and buffers. It fails, having written
// nothing, where the transport cannot be taken over (HTTP/2 and others): newSSE serves the stream
// then. The response's head is the stream's to write (writeHead).
func hijackSSE(w http.ResponseWriter, m *streamMetrics) (*sseWriter, error) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, err
	}
	return &sseWriter{out: conn, deadline: conn.SetWriteDeadline, conn: conn, m: m, timeout: sseWriteTimeout, pingEvery: PingInterval}, nil
}

// writeHead writes a hijacked stream's response head, with hdr and Connection: close (the
// stream's body ends with the connection), and its first bytes, in one write.
func (s *sseWriter) writeHead(hdr http.Header, first []byte) bool {
	hdr.Set("Connection", "close")
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	_ = hdr.Write(&head)
	head.WriteString("\r\n")
	head.Write(first)
	return s.write(head.Bytes())
}

// write writes b within the write timeout; false when the client did not take it.
func (s *sseWriter) write(b []byte) bool {
	return s.writeWithin(b, s.timeout)
}

func (s *sseWriter) writeWithin(b []byte, d time.Duration) bool {
	_ = s.deadline(time.Now().Add(d))
	if _, err := s.out.Write(b); err != nil {
		return false
	}
	return s.flush == nil || s.flush() == nil
}

// events writes b, n events, and counts them; a client that does not take them is dropped.
func (s *sseWriter) events(b []byte, n int) bool {
	if !s.write(b) {
		s.m.dropped.Inc()
		return false
	}
	s.m.sent.Add(float64(n))
	return true
}

// dropped counts a stream that ends because its client went away or fell behind.
func (s *sseWriter) dropped() { s.m.dropped.Inc() }

// farewell ends the stream with the farewell.
func (s *sseWriter) farewell() { _ = s.writeWithin(farewell, sseFarewellTimeout) }

// open counts the stream as open and starts its pings. It then ends with the first of gone (its
// client went away), held (its credential stopped authenticating) and closing (the shutdown began)
// that sseNext sees.
func (s *sseWriter) open(gone <-chan struct{}, held context.Context, closing <-chan struct{}) {
	s.gone, s.held, s.closing = gone, held, closing
	s.m.open.Inc()
	s.ping = time.NewTicker(s.pingEvery)
}

// close ends the stream: a hijacked one's connection is closed; a stream within its request
// leaves no deadline on the connection for its next request.
func (s *sseWriter) close() {
	if s.conn != nil {
		_ = s.conn.Close()
	} else {
		_ = s.deadline(time.Time{})
	}
	if s.ping != nil {
		s.ping.Stop()
		s.m.open.Dec()
	}
}

// sseNext waits for the next value of an open stream's ready, pinging meanwhile. live is false
// when the stream ended first, the end written and counted: the client went away or did not take
// a ping (dropped), the credential stopped authenticating (a comment saying why; revoked), or the
// shutdown began (the farewell). ok is false when ready was closed.
func sseNext[T any](s *sseWriter, ready <-chan T) (v T, ok, live bool) {
	for {
		select {
		case v, ok = <-ready:
			return v, ok, true
		case <-s.ping.C:
			if !s.write(pingBytes) {
				s.m.dropped.Inc()
				return v, false, false
			}
		case <-s.gone:
			s.m.dropped.Inc()
			return v, false, false
		case <-s.held.Done():
			_ = s.write(endedBytes(s.held))
			s.m.revoked.Inc()
			return v, false, false
		case <-s.closing:
			s.farewell()
			return v, false, false
		}
	}
}
