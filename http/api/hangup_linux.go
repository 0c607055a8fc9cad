//go:build linux

package api

import (
	"net"
	"sync"
	"syscall"
)

// epollWatcher watches every registered connection for a hangup with one epoll set and one
// goroutine. A registration is keyed by a number of its own (in the event's data), never by the
// file descriptor, which the kernel reuses once a connection is closed.
type epollWatcher struct {
	epfd int
	mu   sync.Mutex
	next int32
	regs map[int32]*hangupReg
}

type hangupReg struct {
	gone chan struct{}
	once sync.Once
}

func (r *hangupReg) fire() { r.once.Do(func() { close(r.gone) }) }

// hangups is the process's one watcher, started by the first stream.
var hangups = sync.OnceValue(newHangupWatcher)

func newHangupWatcher() hangupWatcher {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return readerWatcher{}
	}
	w := &epollWatcher{epfd: epfd, regs: map[int32]*hangupReg{}}
	go w.loop()
	return w
}

func (w *epollWatcher) watch(conn net.Conn) (<-chan struct{}, func()) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return readerWatcher{}.watch(conn)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return readerWatcher{}.watch(conn)
	}
	reg := &hangupReg{gone: make(chan struct{})}
	w.mu.Lock()
	key := w.next
	for _, taken := w.regs[key]; taken; _, taken = w.regs[key] {
		key++ // after wrapping around, skip keys of streams still open
	}
	w.next = key + 1
	w.regs[key] = reg
	w.mu.Unlock()
	var addErr error
	ctlErr := raw.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLHUP | syscall.EPOLLERR | syscall.EPOLLONESHOT, Fd: key}
		addErr = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if ctlErr != nil || addErr != nil {
		w.forget(key)
		return readerWatcher{}.watch(conn)
	}
	stop := func() {
		// Called before the connection is closed, while its descriptor is still this one.
		_ = raw.Control(func(fd uintptr) { _ = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil) })
		w.forget(key)
	}
	return reg.gone, stop
}

func (w *epollWatcher) forget(key int32) {
	w.mu.Lock()
	delete(w.regs, key)
	w.mu.Unlock()
}

func (w *epollWatcher) loop() {
	events := make([]syscall.EpollEvent, 128)
	for {
		n, err := syscall.EpollWait(w.epfd, events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return // the set cannot be waited on any more; streams still end on write errors
		}
		w.mu.Lock()
		for i := 0; i < n; i++ {
			key := events[i].Fd
			if reg, ok := w.regs[key]; ok {
				delete(w.regs, key)
				reg.fire()
			}
		}
		w.mu.Unlock()
	}
}
