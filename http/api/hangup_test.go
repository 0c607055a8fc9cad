package api

import (
	"net"
	"testing"
	"time"
)

// pair returns the two ends of a loopback TCP connection.
func pair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

func TestHangupWatchers(t *testing.T) {
	for name, w := range map[string]hangupWatcher{"process": hangups(), "reader": readerWatcher{}} {
		t.Run(name, func(t *testing.T) {
			// Many streams at once: only the ones whose clients leave are reported.
			const n = 50
			servers, clients, gones, stops := make([]net.Conn, n), make([]net.Conn, n), make([]<-chan struct{}, n), make([]func(), n)
			for i := range n {
				servers[i], clients[i] = pair(t)
				gones[i], stops[i] = w.watch(servers[i])
			}
			for i := 0; i < n; i += 2 {
				clients[i].Close()
			}
			for i := range n {
				select {
				case <-gones[i]:
					if i%2 == 1 {
						t.Fatalf("stream %d reported gone while its client stays", i)
					}
				case <-time.After(map[bool]time.Duration{true: 5 * time.Second, false: 50 * time.Millisecond}[i%2 == 0]):
					if i%2 == 0 {
						t.Fatalf("stream %d: its client left and nothing was reported", i)
					}
				}
			}
			// Streams that end on the server's side stop watching before they close; the
			// descriptors, reused by new connections, are watched afresh.
			for i := 1; i < n; i += 2 {
				stops[i]()
				servers[i].Close()
			}
			s, c := pair(t)
			gone, stop := w.watch(s)
			defer stop()
			select {
			case <-gone:
				t.Fatal("a new connection on a reused descriptor was reported gone")
			case <-time.After(50 * time.Millisecond):
			}
			_, _ = c.Write([]byte("x")) // a client that sends anything after its request is done with it
			select {
			case <-gone:
			case <-time.After(5 * time.Second):
				t.Fatal("data from the client was not reported")
			}
			for i := 0; i < n; i += 2 {
				stops[i]()
			}
		})
	}
}
