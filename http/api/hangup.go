package api

import "net"

// A hijacked stream must learn when its client goes away, although the client sends nothing
// after its request. watchHangup reports it on the returned channel (closed when the peer
// closes or resets the connection, or sends anything) until stop is called. On Linux one
// goroutine watches every stream through its own epoll set (hangup_linux.go), so that an open
// stream costs one goroutine, its writer, instead of two; elsewhere each stream has a reader
// goroutine (hangup_other.go).
type hangupWatcher interface {
	watch(conn net.Conn) (gone <-chan struct{}, stop func())
}

// readerWatcher blocks a goroutine in a one-byte read per connection.
type readerWatcher struct{}

func (readerWatcher) watch(conn net.Conn) (<-chan struct{}, func()) {
	gone := make(chan struct{})
	go func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		close(gone)
	}()
	// The reader ends when the connection is closed, which is how every stream ends.
	return gone, func() {}
}
