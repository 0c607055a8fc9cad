package server

import (
	"container/list"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/http/apierr"
)

// Connection limits of the public listener (docs/operations.md, Connections and metrics).
//
// Every open connection costs a file descriptor and some memory, and a client can open them for
// nothing: without limits, one client holding thousands of idle connections used up the
// process's descriptors, accepts failed with "too many open files", and real requests waited
// until the header timeout closed the idle ones. Conns bounds that in two ways:
//
//   - A total cap (MaxConns). The listener takes a slot before it accepts and gives it back when
//     the connection closes; at the cap it stops accepting (clients wait in the kernel's accept
//     queue) instead of running out of descriptors. While it waits it closes the oldest idle
//     connection, so idle connections make room for new ones and only connections in the middle
//     of a request hold the cap.
//   - A cap on the idle connections of one client address (MaxIdlePerAddr): when an address holds
//     more, its oldest idle ones are closed.
//   - A cap on the open connections of one client address, idle or in the middle of a request
//     (MaxPerAddr). A connection accepted beyond it is answered 503 and closed at once, before any
//     of its request is read: one client sending slow requests on many connections cannot hold
//     the total cap (and the memory of the requests it has begun) on its own. Addresses in Exempt
//     are not held to it: loopback by default, where a reverse proxy on the same machine, or a
//     load generator, holds every client's connections.
//
// A connection is idle when it is open but not in the middle of a request: accepted and no byte
// of a request received yet (http.StateNew with nothing waiting unread in its socket, on Linux),
// or kept alive between requests (http.StateIdle). A cap
// closes only a connection idle for a grace period: a second for one that has not sent a request
// yet (a client sends its request as soon as it connects, so a pool that opens many connections
// at once is not cut off before its first requests), five seconds for one kept alive after a
// request (a pool that pauses between bursts keeps its connections; five seconds is the
// keep-alive timeout of many servers, Node's among them, so clients already expect an idle
// connection to be closed after it). Closing an idle connection can still race with a client
// reusing it at that very moment, which HTTP clients retry for idempotent requests only; the
// oldest idle connection is the one least likely to be reused, as clients take their most
// recently used connection first. A client address is an IPv4 address or an IPv6 /64 (one host
// or one network holds a whole /64).

// DefaultMaxIdlePerAddr is the default cap on one client address's idle connections: more than a
// browser (6 per host) or a typical client pool holds, and the size of common reverse proxies'
// idle pools (Caddy keeps 32 per upstream).
const DefaultMaxIdlePerAddr = 32

// DefaultMaxPerAddr is the default cap on one client address's open connections: twenty times
// what a browser opens to one host, and twice the 64 connections of Herald's own load generator,
// while a single address cannot take more than a small part of the total cap.
const DefaultMaxPerAddr = 128

// DefaultExempt are the addresses held to no per-address cap of open connections by default:
// loopback, where a reverse proxy on the same machine holds every client's connections.
func DefaultExempt() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// MaxDefaultConns bounds the default total cap whatever the open-files limit.
const MaxDefaultConns = 65536

// connMemory is what one open connection costs: its goroutine and, once it has served a request,
// its read and write buffers (measured: 5,000 kept-alive connections added 100 MB of RSS).
const connMemory = 20 << 10

// fallbackMaxConns is the total cap where the open-files limit cannot be read.
const fallbackMaxConns = 4096

// The grace periods (above): how long a connection is idle before a cap may close it.
const (
	DefaultGraceNew  = time.Second
	DefaultGraceKept = 5 * time.Second
)

// ConnLimits configures Conns.
type ConnLimits struct {
	// MaxConns caps the open connections (0: DefaultMaxConns()).
	MaxConns int
	// MaxIdlePerAddr caps the idle connections of one client address (0: DefaultMaxIdlePerAddr;
	// negative: no cap).
	MaxIdlePerAddr int
	// MaxPerAddr caps the open connections of one client address (0: DefaultMaxPerAddr; negative:
	// no cap), but of the addresses in Exempt (nil: DefaultExempt(); empty: none).
	MaxPerAddr int
	Exempt     []netip.Prefix
	// GraceNew is how long a connection that has not sent a request yet must have been idle
	// before a cap closes it (0: DefaultGraceNew); GraceKept the same for a connection kept alive
	// after a request (0: DefaultGraceKept).
	GraceNew, GraceKept time.Duration
	// Registry receives the connection metrics (nil: none).
	Registry prometheus.Registerer
}

// DefaultMaxConns is the total cap derived from the open-files limit (RLIMIT_NOFILE's soft limit,
// which RaiseFileLimit raises to the hard limit at start-up): the limit less a headroom for
// Herald's other descriptors — the bbolt file, the admin socket and the metrics listener,
// outgoing calls to the networks, webhook receivers, S3 and the live-data fan-outs, local media
// files, and in sandbox mode both ends of every connection to the in-process simulator. The
// headroom is a quarter of the limit and at least 256 (but never more than half of it):
//
//	limit - min(max(256, limit/4), limit/2)
//
// for example 768 connections at a limit of 1,024 and 15,000 at 20,000. It is also at most
// MaxDefaultConns, and at most what half of Go's soft memory limit holds at connMemory each
// (8,192 under Herald's default limit of 320 MiB; more when GOMEMLIMIT sets a larger one).
func DefaultMaxConns() int {
	soft, ok := FileLimit()
	if !ok {
		return fallbackMaxConns
	}
	return min(maxConnsFor(soft), maxConnsInMemory(debug.SetMemoryLimit(-1)))
}

func maxConnsFor(limit uint64) int {
	headroom := max(uint64(256), limit/4)
	headroom = min(headroom, limit/2)
	return int(min(limit-headroom, MaxDefaultConns))
}

func maxConnsInMemory(memLimit int64) int {
	if memLimit <= 0 {
		return MaxDefaultConns
	}
	return int(min(memLimit/2/connMemory, MaxDefaultConns))
}

// Conns tracks and limits the connections of one listener: Listener wraps it, ConnState is the
// http.Server's hook.
type Conns struct {
	maxIdle             int // per address; 0: no cap
	maxOpen             int // per address; 0: no cap
	exempt              []netip.Prefix
	graceNew, graceKept time.Duration
	sem                 chan struct{}
	// idleSignal wakes an Accept waiting at the cap when a connection turns idle.
	idleSignal chan struct{}

	mu     sync.Mutex
	conns  map[net.Conn]*trackedConn
	idle   idleLists             // every idle connection
	byAddr map[string]*idleLists // the idle connections of each client address
	// openBy counts the open connections of each client address held to maxOpen.
	openBy map[string]int

	open      atomic.Int64
	atCap     prometheus.Counter
	reclaimed *prometheus.CounterVec
	refused   prometheus.Counter

	log atomic.Pointer[slog.Logger]
	// refusedSince counts the connections refused since the last log line about them, logged at
	// refusedLogged (unix nanoseconds).
	refusedSince, refusedLogged atomic.Int64
}

type trackedConn struct {
	conn  net.Conn
	addr  string
	since time.Time // when it turned idle
	kept  bool      // it has served a request
	// idleEl and addrEl are the connection's elements in Conns.idle and its address's lists
	// while it is idle, nil otherwise.
	idleEl, addrEl *list.Element
}

// idleLists are idle connections in two lists, each oldest first: those that have not sent a
// request yet, and those kept alive after one (their grace periods differ).
type idleLists struct{ fresh, kept list.List }

func (l *idleLists) len() int { return l.fresh.Len() + l.kept.Len() }

func (l *idleLists) of(t *trackedConn) *list.List {
	if t.kept {
		return &l.kept
	}
	return &l.fresh
}

// mature is the longest idle connection of l whose grace period is over (nil: none), and
// otherwise how long until one's is.
//
// A connection that has not sent a request yet is first asked whether one waits unread in its
// socket: net/http reports a connection StateNew from accept until it has read a request's
// header, and on a busy server the connection's goroutine may not have begun reading for longer
// than the grace period. Such a connection is in the middle of a request, not idle: it is taken
// out of the idle lists, as StateActive would, instead of being closed under a request its
// client cannot safely send again.
func (c *Conns) mature(l *idleLists, now time.Time) (*trackedConn, time.Duration) {
	for e := l.fresh.Front(); e != nil; e = l.fresh.Front() {
		t := e.Value.(*trackedConn)
		if now.Sub(t.since) < c.graceNew || !hasUnread(t.conn) {
			break
		}
		c.unmarkIdle(t)
	}
	var best *trackedConn
	wait := time.Duration(0)
	for _, e := range []*list.Element{l.fresh.Front(), l.kept.Front()} {
		if e == nil {
			continue
		}
		t := e.Value.(*trackedConn)
		grace := c.graceNew
		if t.kept {
			grace = c.graceKept
		}
		if left := grace - now.Sub(t.since); left > 0 {
			if wait == 0 || left < wait {
				wait = left
			}
			continue
		}
		if best == nil || t.since.Before(best.since) {
			best = t
		}
	}
	return best, wait
}

// Reasons an idle connection was closed (the reason label of
// herald_http_connections_reclaimed_total).
const (
	reclaimPerAddr  = "per_address"
	reclaimAtLimit  = "at_capacity"
	reclaimedHelp   = "Idle connections Herald closed, by reason: per_address (the client address held more idle connections than its cap), at_capacity (room for a new connection at the total cap)."
	connectionsHelp = "Open connections of the API listener."
)

// NewConns builds the tracker and registers its metrics.
func NewConns(lim ConnLimits) *Conns {
	if lim.MaxConns <= 0 {
		lim.MaxConns = DefaultMaxConns()
	}
	switch {
	case lim.MaxIdlePerAddr == 0:
		lim.MaxIdlePerAddr = DefaultMaxIdlePerAddr
	case lim.MaxIdlePerAddr < 0:
		lim.MaxIdlePerAddr = 0
	}
	switch {
	case lim.MaxPerAddr == 0:
		lim.MaxPerAddr = DefaultMaxPerAddr
	case lim.MaxPerAddr < 0:
		lim.MaxPerAddr = 0
	}
	if lim.Exempt == nil {
		lim.Exempt = DefaultExempt()
	}
	if lim.GraceNew <= 0 {
		lim.GraceNew = DefaultGraceNew
	}
	if lim.GraceKept <= 0 {
		lim.GraceKept = DefaultGraceKept
	}
	c := &Conns{
		maxIdle:    lim.MaxIdlePerAddr,
		maxOpen:    lim.MaxPerAddr,
		exempt:     lim.Exempt,
		openBy:     map[string]int{},
		graceNew:   lim.GraceNew,
		graceKept:  lim.GraceKept,
		sem:        make(chan struct{}, lim.MaxConns),
		idleSignal: make(chan struct{}, 1),
		conns:      map[net.Conn]*trackedConn{},
		byAddr:     map[string]*idleLists{},
		atCap: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_http_connections_limit_reached_total", Help: "Times the API listener reached its cap of open connections and stopped accepting until one closed.",
		}),
		reclaimed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_http_connections_reclaimed_total", Help: reclaimedHelp}, []string{"reason"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_http_connections_refused_total", Help: "Connections answered 503 and closed at accept because their client address already held its cap of open connections (--max-conns-per-addr).",
		}),
	}
	for _, r := range []string{reclaimPerAddr, reclaimAtLimit} {
		c.reclaimed.WithLabelValues(r)
	}
	if lim.Registry != nil {
		lim.Registry.MustRegister(c.atCap, c.reclaimed, c.refused,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_http_connections_open", Help: connectionsHelp},
				func() float64 { return float64(c.open.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "herald_http_connections_max", Help: "The API listener's cap of open connections (--max-conns).",
			}, func() float64 { return float64(cap(c.sem)) }))
	}
	return c
}

// MaxConns is the total cap in force.
func (c *Conns) MaxConns() int { return cap(c.sem) }

// MaxIdlePerAddr is the per-address cap in force (0: none).
func (c *Conns) MaxIdlePerAddr() int { return c.maxIdle }

// MaxPerAddr is the per-address cap of open connections in force (0: none).
func (c *Conns) MaxPerAddr() int { return c.maxOpen }

// Open is the number of connections open now.
func (c *Conns) Open() int { return int(c.open.Load()) }

// Configure makes srv report its connections' states to c and its own errors (accept errors,
// malformed requests) to log at warn level.
func (c *Conns) Configure(srv *http.Server, logger *slog.Logger) {
	c.log.Store(logger)
	srv.ConnState = c.ConnState
	srv.ErrorLog = ErrorLog(logger)
}

// ErrorLog is a log.Logger for http.Server.ErrorLog that writes to log at warn level, so that
// what net/http reports (accept errors such as "too many open files", TLS handshake errors,
// panics it recovered) reaches the structured log.
func ErrorLog(logger *slog.Logger) *log.Logger {
	return slog.NewLogLogger(logger.With("component", "http_server").Handler(), slog.LevelWarn)
}

// Listener wraps ln: Accept waits for a free slot under the total cap, and a connection gives its
// slot back when it is closed.
func (c *Conns) Listener(ln net.Listener) net.Listener {
	l := &limitListener{Listener: ln, c: c, done: make(chan struct{})}
	go c.sweep(l.done)
	return l
}

// ConnState is the http.Server's ConnState hook.
func (c *Conns) ConnState(conn net.Conn, state http.ConnState) {
	var victims []net.Conn
	c.mu.Lock()
	t := c.conns[conn]
	switch state {
	case http.StateNew:
		t = &trackedConn{conn: conn, addr: clientAddress(conn.RemoteAddr())}
		c.conns[conn] = t
		victims = c.markIdle(t)
	case http.StateIdle:
		if t != nil {
			t.kept = true
			victims = c.markIdle(t)
		}
	case http.StateActive:
		if t != nil {
			c.unmarkIdle(t)
		}
	case http.StateHijacked, http.StateClosed:
		if t != nil {
			c.unmarkIdle(t)
			delete(c.conns, conn)
		}
	}
	c.mu.Unlock()
	c.closeReclaimed(victims, reclaimPerAddr)
	if state == http.StateNew || state == http.StateIdle {
		select {
		case c.idleSignal <- struct{}{}:
		default:
		}
	}
}

// markIdle puts t last in the idle lists and returns the connections of its address beyond the
// per-address cap (overCap). c.mu is held.
func (c *Conns) markIdle(t *trackedConn) []net.Conn {
	c.unmarkIdle(t)
	t.since = time.Now()
	t.idleEl = c.idle.of(t).PushBack(t)
	l := c.byAddr[t.addr]
	if l == nil {
		l = &idleLists{}
		c.byAddr[t.addr] = l
	}
	t.addrEl = l.of(t).PushBack(t)
	return c.overCap(l, t.since)
}

// overCap takes the longest idle connections of one address whose grace period is over out of
// the lists while the address holds more than the cap, and returns them for the caller to close.
// c.mu is held.
func (c *Conns) overCap(l *idleLists, now time.Time) []net.Conn {
	if c.maxIdle <= 0 {
		return nil
	}
	var victims []net.Conn
	for l.len() > c.maxIdle {
		v, _ := c.mature(l, now)
		if v == nil {
			break
		}
		c.unmarkIdle(v)
		victims = append(victims, v.conn)
	}
	return victims
}

// sweep applies the per-address cap to connections that have become old enough since they
// turned idle (a burst of connections from one address, then silence), every grace period until
// done closes.
func (c *Conns) sweep(done <-chan struct{}) {
	if c.maxIdle <= 0 {
		return
	}
	tick := time.NewTicker(max(min(c.graceNew, c.graceKept)/2, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			var victims []net.Conn
			c.mu.Lock()
			for _, l := range c.byAddr {
				if l.len() > c.maxIdle {
					victims = append(victims, c.overCap(l, now)...)
				}
			}
			c.mu.Unlock()
			c.closeReclaimed(victims, reclaimPerAddr)
		}
	}
}

func (c *Conns) closeReclaimed(victims []net.Conn, reason string) {
	for _, v := range victims {
		// Counted first, so that a client that sees its connection closed sees it counted.
		c.reclaimed.WithLabelValues(reason).Inc()
		_ = v.Close()
	}
}

// unmarkIdle takes t out of the idle lists. c.mu is held.
func (c *Conns) unmarkIdle(t *trackedConn) {
	if t.idleEl != nil {
		c.idle.of(t).Remove(t.idleEl)
		t.idleEl = nil
	}
	if t.addrEl != nil {
		l := c.byAddr[t.addr]
		l.of(t).Remove(t.addrEl)
		t.addrEl = nil
		if l.len() == 0 {
			delete(c.byAddr, t.addr)
		}
	}
}

// reclaimOldestIdle closes the longest idle connection whose grace period is over. When there
// is none, it returns how long until one's is (0: no connection is idle).
func (c *Conns) reclaimOldestIdle() time.Duration {
	c.mu.Lock()
	v, wait := c.mature(&c.idle, time.Now())
	if v == nil {
		c.mu.Unlock()
		return wait
	}
	c.unmarkIdle(v)
	c.mu.Unlock()
	c.closeReclaimed([]net.Conn{v.conn}, reclaimAtLimit)
	return 0
}

// hasUnread reports whether bytes wait unread in conn's socket (through a TLS connection and the
// listener's wrapper to the TCP connection under them).
func hasUnread(conn net.Conn) bool {
	for {
		switch c := conn.(type) {
		case *tls.Conn:
			conn = c.NetConn()
		case *limitedConn:
			conn = c.Conn
		case syscall.Conn:
			return unreadBytes(c) > 0
		default:
			return false
		}
	}
}

// clientAddress is the per-address key of a remote address: an IPv4 address, or the /64 of an
// IPv6 one.
func clientAddress(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if ip4 := tcp.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return (&net.IPNet{IP: tcp.IP.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

type limitListener struct {
	net.Listener
	c         *Conns
	done      chan struct{}
	closeOnce sync.Once
}

// Accept takes a slot under the cap, then accepts. At the cap it closes the longest idle
// connection whose grace period is over, and waits until a slot is free. A connection from an
// address that holds its cap of open connections is refused (refuse) and Accept goes on to the
// next.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		if !l.acquire() {
			return nil, net.ErrClosed
		}
		conn, err := l.Listener.Accept()
		if err != nil {
			<-l.c.sem
			return nil, err
		}
		addr, ok := l.c.admit(conn.RemoteAddr())
		if !ok {
			<-l.c.sem
			l.c.refuse(conn)
			continue
		}
		l.c.open.Add(1)
		return &limitedConn{Conn: conn, c: l.c, addr: addr}, nil
	}
}

// admit counts a new connection against its address's cap: false when the address already
// holds maxOpen connections. addr is the address counted ("" when none is: no cap, or an exempt
// address), for the connection to give back when it closes.
func (c *Conns) admit(remote net.Addr) (addr string, ok bool) {
	if c.maxOpen <= 0 || c.isExempt(remote) {
		return "", true
	}
	addr = clientAddress(remote)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.openBy[addr] >= c.maxOpen {
		return "", false
	}
	c.openBy[addr]++
	return addr, true
}

// closed gives back what admit counted.
func (c *Conns) closed(addr string) {
	if addr == "" {
		return
	}
	c.mu.Lock()
	if c.openBy[addr]--; c.openBy[addr] <= 0 {
		delete(c.openBy, addr)
	}
	c.mu.Unlock()
}

func (c *Conns) isExempt(remote net.Addr) bool {
	tcp, ok := remote.(*net.TCPAddr)
	if !ok {
		return true // not a network peer (a Unix socket)
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return false
	}
	ip = ip.Unmap()
	for _, p := range c.exempt {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// refusedAnswer is what a connection refused at accept reads: the API's error shape, with
// Retry-After, before the connection is closed.
var refusedAnswer = func() string {
	e := apierr.Unavailable("too many open connections from this client address; close some and retry")
	body, _ := json.Marshal(e.Body())
	return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: " + e.Header.Get("Retry-After") +
		"\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body)
}()

// refuse answers a connection over its address's cap and closes it, without holding up Accept.
// The refusals are counted, and logged in one warning a minute at most.
func (c *Conns) refuse(conn net.Conn) {
	c.refused.Inc()
	go func() {
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = io.WriteString(conn, refusedAnswer)
		_ = conn.Close()
	}()
	n := c.refusedSince.Add(1)
	now := time.Now().UnixNano()
	if last := c.refusedLogged.Load(); now-last >= int64(time.Minute) && c.refusedLogged.CompareAndSwap(last, now) {
		c.refusedSince.Add(-n)
		if log := c.log.Load(); log != nil {
			log.Warn("refusing connections: a client address holds its cap of open connections (--max-conns-per-addr); refused counts them since the last such line",
				"refused", n, "client_address", clientAddress(conn.RemoteAddr()), "max_per_address", c.maxOpen)
		}
	}
}

func (l *limitListener) acquire() bool {
	select {
	case l.c.sem <- struct{}{}:
		return true
	default:
	}
	l.c.atCap.Inc()
	for {
		var matured <-chan time.Time
		var timer *time.Timer
		if wait := l.c.reclaimOldestIdle(); wait > 0 {
			timer = time.NewTimer(wait)
			matured = timer.C
		}
		got, closed := false, false
		select {
		case l.c.sem <- struct{}{}:
			got = true
		case <-l.c.idleSignal: // a connection turned idle: look again
		case <-matured:
		case <-l.done:
			closed = true
		}
		if timer != nil {
			timer.Stop()
		}
		if got || closed {
			return got
		}
	}
}

// Close closes the listener and wakes an Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn gives its slot, and its place under its address's cap, back on its first Close.
type limitedConn struct {
	net.Conn
	c    *Conns
	addr string // counted against its address's cap ("": not)
	once sync.Once
}

func (lc *limitedConn) Close() error {
	err := lc.Conn.Close()
	lc.once.Do(func() {
		lc.c.closed(lc.addr)
		lc.c.open.Add(-1)
		<-lc.c.sem
	})
	return err
}
