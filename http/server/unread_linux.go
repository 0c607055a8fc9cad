//go:build linux

package server

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// unreadBytes is how many bytes wait unread in a socket's receive queue (SIOCINQ), 0 when that
// cannot be asked.
func unreadBytes(sc syscall.Conn) int {
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	if err := raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil {
		return 0
	}
	return n
}
