package server

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/testkit"
)

// connBundle is an http.Server on a loopback listener limited by Conns. GET /ok answers at once;
// GET /block answers when a value is sent on release (entered receives one value per request
// that reached it).
type connBundle struct {
	t       *testing.T
	conns   *Conns
	addr    string
	entered chan struct{}
	release chan struct{}
	logs    *syncBuffer
}

func startConnBundle(t *testing.T, lim ConnLimits) *connBundle {
	t.Helper()
	lim.Registry = prometheus.NewRegistry()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &connBundle{t: t, conns: NewConns(lim), addr: ln.Addr().String(), entered: make(chan struct{}, 100),
		release: make(chan struct{}), logs: &syncBuffer{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /block", func(w http.ResponseWriter, r *http.Request) {
		b.entered <- struct{}{}
		<-b.release
		_, _ = io.WriteString(w, "released")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	b.conns.Configure(srv, slog.New(slog.NewJSONHandler(b.logs, nil)))
	go func() { _ = srv.Serve(b.conns.Listener(ln)) }()
	t.Cleanup(func() {
		close(b.release)
		_ = srv.Close()
	})
	return b
}

// dial opens a connection and waits until the server tracks it, so that connections opened one
// after another become idle in that order.
func (b *connBundle) dial() net.Conn {
	b.t.Helper()
	c, err := net.Dial("tcp", b.addr)
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = c.Close() })
	// A connection the caps close at once (a short grace) may be gone before it is seen tracked.
	require.Eventually(b.t, func() bool { return b.conns.tracks(c.LocalAddr()) || closedByServer(c) }, 10*time.Second, time.Millisecond)
	return c
}

// closedByServer reports whether the server has closed c (a read finds the end at once).
func closedByServer(c net.Conn) bool {
	if err := c.SetReadDeadline(time.Now().Add(time.Millisecond)); err != nil {
		return true
	}
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// waitIdle waits until the server counts the connection from c as idle.
func (b *connBundle) waitIdle(c net.Conn) {
	b.t.Helper()
	require.Eventually(b.t, func() bool {
		b.conns.mu.Lock()
		defer b.conns.mu.Unlock()
		for conn, tc := range b.conns.conns {
			if conn.RemoteAddr().String() == c.LocalAddr().String() {
				return tc.idleEl != nil
			}
		}
		return false
	}, 10*time.Second, time.Millisecond)
}

// tracks reports whether the connection from the client address local is open and tracked.
func (c *Conns) tracks(local net.Addr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for conn := range c.conns {
		if conn.RemoteAddr().String() == local.String() {
			return true
		}
	}
	return false
}

// get sends GET path on c and reads the response.
func get(t *testing.T, c net.Conn, path string) string {
	t.Helper()
	_, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: herald.test\r\n\r\n")
	require.NoError(t, err)
	return readResponse(t, c)
}

func readResponse(t *testing.T, c net.Conn) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	return string(body)
}

// requireClosedByServer waits (at most 20 s) for the server to close c.
func requireClosedByServer(t *testing.T, c net.Conn, what string) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "%s: still open", what)
	require.Error(t, err, "%s", what)
}

// One address holding more idle connections than its cap loses its oldest ones; the newer ones
// stay open and serve requests.
func TestConnsCloseTheOldestIdleConnectionsOfAnAddress(t *testing.T) {
	t.Parallel()
	b := startConnBundle(t, ConnLimits{MaxConns: 100, MaxIdlePerAddr: 4, GraceNew: time.Millisecond, GraceKept: time.Millisecond})
	var cs []net.Conn
	for range 4 {
		cs = append(cs, b.dial())
	}
	// A fifth connection that has served a request and is kept alive is idle too.
	c5 := b.dial()
	require.Equal(t, "ok", get(t, c5, "/ok"))
	cs = append(cs, c5)
	requireClosedByServer(t, cs[0], "the oldest idle connection")
	cs = append(cs, b.dial())
	requireClosedByServer(t, cs[1], "the second oldest")
	for i, c := range cs[2:] {
		require.Equal(t, "ok", get(t, c, "/ok"), "connection %d is still open", i+2)
		// The server marks a connection idle after its response is out, possibly after the
		// client has read it: wait, so that the connections turn idle in this order.
		b.waitIdle(c)
	}
	require.Equal(t, 2.0, testutil.ToFloat64(b.conns.reclaimed.WithLabelValues(reclaimPerAddr)))
	// The client sees a reclaimed connection closed a moment before the server's state hook
	// counts it closed.
	require.Eventually(t, func() bool { return b.conns.Open() == 4 }, 5*time.Second, 5*time.Millisecond, "four connections open")

	// A connection in the middle of a request is not idle: four idle ones and one active stay
	// open; once it is idle again, the oldest idle one goes.
	active := b.dial()
	requireClosedByServer(t, cs[2], "the oldest idle connection, for the new one")
	_, err := io.WriteString(active, "GET /block HTTP/1.1\r\nHost: herald.test\r\n\r\n")
	require.NoError(t, err)
	<-b.entered
	extra := b.dial()
	for i, c := range cs[3:] {
		require.Equal(t, "ok", get(t, c, "/ok"), "connection %d is still open", i+3)
	}
	b.release <- struct{}{}
	require.Equal(t, "released", readResponse(t, active))
	requireClosedByServer(t, extra, "the oldest idle connection, once the active one is idle again")
	require.Equal(t, "ok", get(t, active, "/ok"))
	require.Equal(t, 4.0, testutil.ToFloat64(b.conns.reclaimed.WithLabelValues(reclaimPerAddr)))
}

// A connection is closed by a cap only once it has been idle for the grace period: a client
// that opens many connections at once is not cut off before its requests.
func TestConnsSpareConnectionsWithinTheirGrace(t *testing.T) {
	t.Parallel()
	b := startConnBundle(t, ConnLimits{MaxConns: 100, MaxIdlePerAddr: 2, GraceNew: time.Hour, GraceKept: time.Hour})
	var cs []net.Conn
	for range 6 {
		cs = append(cs, b.dial())
	}
	for i, c := range cs {
		require.Equal(t, "ok", get(t, c, "/ok"), "connection %d", i)
	}
	require.Equal(t, 6, b.conns.Open())
	require.Equal(t, 0.0, testutil.ToFloat64(b.conns.reclaimed.WithLabelValues(reclaimPerAddr)))
}

// A connection kept alive after a request has a longer grace period than one that never sent a
// request: past the cap, the connections that sent nothing go first.
func TestConnsKeepAlivePoolOutlastsConnectionsThatSendNothing(t *testing.T) {
	t.Parallel()
	b := startConnBundle(t, ConnLimits{MaxConns: 100, MaxIdlePerAddr: 2, GraceNew: time.Millisecond, GraceKept: time.Hour})
	pool := []net.Conn{b.dial(), b.dial()}
	for _, c := range pool {
		require.Equal(t, "ok", get(t, c, "/ok"))
	}
	silent := []net.Conn{b.dial(), b.dial()}
	for i, c := range silent {
		requireClosedByServer(t, c, fmt.Sprintf("silent connection %d", i))
	}
	for i, c := range pool {
		require.Equal(t, "ok", get(t, c, "/ok"), "pooled connection %d", i)
	}
}

// At the total cap the listener stops accepting; a waiting client is served once another
// connection closes, and nothing is logged about running out of files.
func TestConnsStopAcceptingAtTheCap(t *testing.T) {
	t.Parallel()
	b := startConnBundle(t, ConnLimits{MaxConns: 3, MaxIdlePerAddr: -1, GraceNew: time.Hour, GraceKept: time.Hour})
	var busy []net.Conn
	for range 3 {
		c := b.dial()
		_, err := io.WriteString(c, "GET /block HTTP/1.1\r\nHost: herald.test\r\n\r\n")
		require.NoError(t, err)
		<-b.entered
		busy = append(busy, c)
	}
	require.Equal(t, 3, b.conns.Open())

	// The kernel completes the handshake, but the server does not accept the connection while
	// the three others are open.
	waiting, err := net.Dial("tcp", b.addr)
	require.NoError(t, err)
	defer waiting.Close()
	_, err = io.WriteString(waiting, "GET /ok HTTP/1.1\r\nHost: herald.test\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, waiting.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, err = waiting.Read(make([]byte, 1))
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "no answer at the cap: %v", err)
	require.Equal(t, 3, b.conns.Open())
	require.GreaterOrEqual(t, testutil.ToFloat64(b.conns.atCap), 1.0)

	// One request ends and its client closes the connection: the waiting request is served.
	b.release <- struct{}{}
	require.Equal(t, "released", readResponse(t, busy[0]))
	require.NoError(t, busy[0].Close())
	require.Equal(t, "ok", readResponse(t, waiting))
	require.Equal(t, 3, b.conns.Open())
	require.Equal(t, 0.0, testutil.ToFloat64(b.conns.reclaimed.WithLabelValues(reclaimAtLimit)))
	require.NotContains(t, b.logs.String(), "too many open files")
}

// Connections that never send a request hold no slot for long at the cap: each new connection
// closes the oldest idle one, so one client opening many connections does not lock others out.
func TestConnsIdleConnectionsMakeRoomAtTheCap(t *testing.T) {
	t.Parallel()
	b := startConnBundle(t, ConnLimits{MaxConns: 8, MaxIdlePerAddr: -1, GraceNew: time.Millisecond, GraceKept: time.Millisecond})
	var idle []net.Conn
	for range 8 {
		c, err := net.Dial("tcp", b.addr)
		require.NoError(t, err)
		defer c.Close()
		idle = append(idle, c)
	}
	client := &http.Client{Timeout: 20 * time.Second}
	for range 20 {
		resp, err := client.Get("http://" + b.addr + "/ok")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		require.LessOrEqual(t, b.conns.Open(), 8)
	}
	requireClosedByServer(t, idle[0], "the first idle connection")
	require.GreaterOrEqual(t, testutil.ToFloat64(b.conns.reclaimed.WithLabelValues(reclaimAtLimit)), 1.0)
}

// net/http's own error log goes to slog at warn level.
func TestErrorLogGoesToSlog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	ErrorLog(slog.New(slog.NewJSONHandler(&buf, nil))).Printf("http: Accept error: accept tcp 127.0.0.1:8080: accept4: too many open files; retrying in 5ms")
	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line), buf.String())
	require.Equal(t, "WARN", line["level"])
	require.Equal(t, "http_server", line["component"])
	require.Contains(t, line["msg"], "too many open files")
}

func TestDefaultMaxConns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit uint64
		want  int
	}{
		{100, 50},
		{256, 128},
		{512, 256},
		{1024, 768},
		{4096, 3072},
		{20000, 15000},
		{1 << 20, MaxDefaultConns},
		{1 << 31, MaxDefaultConns},
	} {
		require.Equal(t, tc.want, maxConnsFor(tc.limit), "limit %d", tc.limit)
	}
	require.Equal(t, 8192, maxConnsInMemory(320<<20), "Herald's default memory limit")
	require.Equal(t, 52428, maxConnsInMemory(2<<30))
	require.Equal(t, 13107, maxConnsInMemory(512<<20))
	require.Equal(t, MaxDefaultConns, maxConnsInMemory(math.MaxInt64), "no memory limit")
	limit, ok := FileLimit()
	if !ok {
		t.Skip("the open-files limit is not read on this system")
	}
	require.LessOrEqual(t, DefaultMaxConns(), maxConnsFor(limit))
	require.Less(t, DefaultMaxConns(), int(limit))
}

func TestClientAddress(t *testing.T) {
	t.Parallel()
	tcp := func(s string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(s), Port: 4242} }
	require.Equal(t, "192.0.2.7", clientAddress(tcp("192.0.2.7")))
	require.Equal(t, "192.0.2.7", clientAddress(tcp("::ffff:192.0.2.7")), "an IPv4-mapped address is its IPv4 address")
	require.Equal(t, "2001:db8:1:2::/64", clientAddress(tcp("2001:db8:1:2::1")))
	require.Equal(t, clientAddress(tcp("2001:db8:1:2:aaaa::9")), clientAddress(tcp("2001:db8:1:2::1")), "one /64, one address")
	require.NotEqual(t, clientAddress(tcp("2001:db8:1:3::1")), clientAddress(tcp("2001:db8:1:2::1")))
}

// syncBuffer collects output written from another goroutine.
type syncBuffer = testkit.SyncBuffer

// dialFrom opens a connection from the loopback address local (127.0.0.2 is another client
// address on the same machine).
func (b *connBundle) dialFrom(local string) net.Conn {
	b.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", b.addr)
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = c.Close() })
	return c
}

// One client address holds at most MaxPerAddr open connections, busy ones included: the next is
// answered 503 in the API's error shape and closed, while another address is served; once its
// connections close, the address may open others.
func TestConnsCapOpenConnectionsPerAddress(t *testing.T) {
	t.Parallel()
	b := startConnBundle(t, ConnLimits{MaxConns: 100, MaxPerAddr: 3, Exempt: []netip.Prefix{}})
	var busy []net.Conn
	for range 3 {
		c := b.dialFrom("127.0.0.1")
		_, err := io.WriteString(c, "GET /block HTTP/1.1\r\nHost: herald.test\r\n\r\n")
		require.NoError(t, err)
		<-b.entered
		busy = append(busy, c)
	}

	over := b.dialFrom("127.0.0.1")
	require.NoError(t, over.SetReadDeadline(time.Now().Add(20*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(over), nil)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	var body struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal(raw, &body))
	require.Equal(t, "internal_error", body.Error.Code)
	requireClosedByServer(t, over, "the connection over the cap")
	require.Equal(t, 1.0, testutil.ToFloat64(b.conns.refused))

	require.Equal(t, "ok", get(t, b.dialFrom("127.0.0.2"), "/ok"), "another address is served")

	for _, c := range busy {
		b.release <- struct{}{}
		_ = c.Close()
	}
	require.Eventually(t, func() bool {
		b.conns.mu.Lock()
		defer b.conns.mu.Unlock()
		return b.conns.openBy["127.0.0.1"] == 0
	}, 10*time.Second, time.Millisecond, "closed connections give their places back")
	require.Equal(t, "ok", get(t, b.dialFrom("127.0.0.1"), "/ok"))
}

// Loopback is exempt by default: a reverse proxy on the same machine holds every client's
// connections.
func TestConnsLoopbackExemptByDefault(t *testing.T) {
	t.Parallel()
	b := startConnBundle(t, ConnLimits{MaxConns: 100, MaxPerAddr: 2})
	for range 4 {
		c := b.dialFrom("127.0.0.1")
		_, err := io.WriteString(c, "GET /block HTTP/1.1\r\nHost: herald.test\r\n\r\n")
		require.NoError(t, err)
		<-b.entered
	}
	require.Equal(t, "ok", get(t, b.dialFrom("127.0.0.1"), "/ok"))
	require.Zero(t, testutil.ToFloat64(b.conns.refused))
}

// A connection whose request waits unread in its socket is not idle, though the server has not
// begun reading it (net/http reports it StateNew until it has read a request's header, which on
// a starved server can take longer than the grace period): the per-address cap passes over it
// and closes a connection that sent nothing. The server's reads are held back by accepting the
// connections here and reporting their states by hand.
func TestConnsSpareAConnectionWhoseRequestWaitsUnread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("unread bytes are asked of the socket on Linux only")
	}
	t.Parallel()
	c := NewConns(ConnLimits{MaxConns: 100, MaxIdlePerAddr: 1, GraceNew: time.Millisecond, GraceKept: time.Hour})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := c.Listener(ln)
	t.Cleanup(func() { _ = l.Close() })
	const request = "POST /api/session HTTP/1.1\r\nHost: herald.test\r\nContent-Length: 2\r\n\r\n{}"
	open := func(send string) (client, server net.Conn) {
		client, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		server, err = l.Accept()
		require.NoError(t, err)
		t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
		if send != "" {
			_, err = io.WriteString(client, send)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return hasUnread(server) }, 10*time.Second, time.Millisecond, "the request reached the server's socket")
			require.True(t, hasUnread(tls.Server(server, &tls.Config{})), "asked through TLS too")
		}
		c.ConnState(server, http.StateNew)
		return client, server
	}
	sentClient, sentServer := open(request) // the oldest
	silentClient, _ := open("")
	laterClient, _ := open("")
	requireClosedByServer(t, silentClient, "the oldest connection that sent nothing")
	require.Equal(t, 1.0, testutil.ToFloat64(c.reclaimed.WithLabelValues(reclaimPerAddr)))
	// Let the sweep look again a few times (every 10 ms here): the two others stay open.
	time.Sleep(100 * time.Millisecond)
	require.False(t, closedByServer(laterClient), "the newer silent connection is within the cap")
	require.False(t, closedByServer(sentClient), "the connection whose request waits")
	require.Equal(t, 1.0, testutil.ToFloat64(c.reclaimed.WithLabelValues(reclaimPerAddr)))
	// Its request is there to read, whole; once served the connection is idle like any other.
	require.NoError(t, sentServer.SetReadDeadline(time.Now().Add(10*time.Second)))
	got := make([]byte, len(request))
	_, err = io.ReadFull(sentServer, got)
	require.NoError(t, err)
	require.Equal(t, request, string(got))
	c.ConnState(sentServer, http.StateActive)
	c.ConnState(sentServer, http.StateIdle)
	c.mu.Lock()
	require.NotNil(t, c.conns[sentServer].idleEl, "idle again after its request")
	c.mu.Unlock()
}
